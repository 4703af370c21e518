#include "viz/plot_widget.h"

#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QStackedWidget>
#include <QSvgGenerator>
#include <QTextStream>
#include <QToolTip>
#include <QVBoxLayout>

#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

struct PlotWidget::Shell {
  QWidget* controls = nullptr;
  QHBoxLayout* controlLayout = nullptr;
  QStackedWidget* stack = nullptr;
  QScrollArea* scroll = nullptr;  // only for scrollable plots
  QLabel* message = nullptr;
};

namespace {
// A plot that was never laid out (a hidden dock) still exports at a useful size.
QSize exportSize(const QCustomPlot* plot) {
  const QSize s = plot->size().expandedTo(plot->minimumSize());
  return (s.width() < 160 || s.height() < 120) ? QSize(800, 500).expandedTo(s) : s;
}
}  // namespace

PlotWidget::PlotWidget(QWidget* parent, bool scrollable) : QWidget(parent), shell_(std::make_unique<Shell>()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  shell_->controls = new QWidget(this);
  shell_->controlLayout = new QHBoxLayout(shell_->controls);
  shell_->controlLayout->setContentsMargins(6, 2, 6, 0);
  shell_->controlLayout->setSpacing(8);
  shell_->controls->hide();
  layout->addWidget(shell_->controls);
  shell_->stack = new QStackedWidget(this);
  layout->addWidget(shell_->stack, 1);
  plot_ = new QCustomPlot;
  plot_->setMouseTracking(true);
  plot_->setContextMenuPolicy(Qt::CustomContextMenu);
  plot_->installEventFilter(this);
  plot_->layer(QString::fromLatin1(kHoverLayer))->setMode(QCPLayer::lmBuffered);
  if (scrollable) {
    shell_->scroll = new QScrollArea(shell_->stack);
    shell_->scroll->setFrameShape(QFrame::NoFrame);
    shell_->scroll->setWidgetResizable(false);
    shell_->scroll->setWidget(plot_);
    shell_->scroll->installEventFilter(this);
    shell_->stack->addWidget(shell_->scroll);
  } else {
    shell_->stack->addWidget(plot_);
  }
  shell_->message = new QLabel(shell_->stack);
  shell_->message->setAlignment(Qt::AlignCenter);
  shell_->message->setWordWrap(true);
  shell_->stack->addWidget(shell_->message);
  connect(plot_, &QCustomPlot::customContextMenuRequested, this, &PlotWidget::showContextMenu);
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
    if (event->buttons() == Qt::NoButton) hoverAt(event->position());
  });
}

PlotWidget::~PlotWidget() = default;

const detail::Theme& PlotWidget::theme() const { return detail::themeFor(dark_); }

void PlotWidget::setDarkTheme(bool dark) {
  dark_ = dark;
  restyle();
}

void PlotWidget::restyle() {
  const auto& t = theme();
  detail::applyTheme(plot_, t);
  // The control bar and the gaps around the plot take the plot's colours, so the widget reads
  // as one piece in either theme.
  QPalette pal = palette();
  pal.setColor(QPalette::Window, t.background);
  pal.setColor(QPalette::WindowText, t.text);
  pal.setColor(QPalette::Base, t.panel);
  pal.setColor(QPalette::AlternateBase, t.background);
  pal.setColor(QPalette::Text, t.text);
  pal.setColor(QPalette::Button, t.panel);
  pal.setColor(QPalette::ButtonText, t.text);
  pal.setColor(QPalette::PlaceholderText, t.mutedText);
  setPalette(pal);
  setAutoFillBackground(true);
  shell_->message->setStyleSheet(
      QStringLiteral("color: %1; background: %2; font-style: italic; padding: 12px;")
          .arg(t.mutedText.name(), t.background.name()));
  themeChanged();
  requestReplot();
}

QHBoxLayout* PlotWidget::controlBar() {
  shell_->controls->show();
  return shell_->controlLayout;
}

QWidget* PlotWidget::plotArea() const { return plot_; }

void PlotWidget::showMessage(const QString& message) {
  shell_->message->setText(message);
  shell_->stack->setCurrentWidget(shell_->message);
}

bool PlotWidget::isShowingMessage() const { return shell_->stack->currentWidget() == shell_->message; }

void PlotWidget::showPlot() {
  shell_->stack->setCurrentWidget(shell_->scroll ? static_cast<QWidget*>(shell_->scroll) : plot_);
}

QSize PlotWidget::viewportSize() const {
  return shell_->scroll ? shell_->scroll->size() : shell_->stack->size();
}

void PlotWidget::requestReplot() { plot_->replot(QCustomPlot::rpQueuedReplot); }

void PlotWidget::replotHover() { plot_->layer(QString::fromLatin1(kHoverLayer))->replot(); }

void PlotWidget::replotNow() { plot_->replot(QCustomPlot::rpImmediateRefresh); }

void PlotWidget::setHoverText(const QString& text, const QPoint& pos) {
  hoverText_ = text;
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(plot_->mapToGlobal(pos + QPoint(14, 12)), text, plot_);
}

QString PlotWidget::csvField(const QString& text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) &&
      !text.contains(QLatin1Char('\n')))
    return text;
  QString quoted = text;
  quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
  return QLatin1Char('"') + quoted + QLatin1Char('"');
}

bool PlotWidget::exportPng(const QString& path, double dpi) {
  const QSize s = exportSize(plot_);
  return plot_->savePng(path, s.width(), s.height(), dpi / 96.0, -1, qRound(dpi));
}

bool PlotWidget::exportSvg(const QString& path) {
  const QSize s = exportSize(plot_);
  QSvgGenerator generator;
  generator.setFileName(path);
  generator.setSize(s);
  generator.setViewBox(QRect(QPoint(0, 0), s));
  generator.setTitle(exportName_);
  generator.setDescription(QStringLiteral("Tensorscope figure"));
  QCPPainter painter;
  if (!painter.begin(&generator)) return false;
  plot_->toPainter(&painter, s.width(), s.height());
  painter.end();
  return QFileInfo(path).size() > 0;
}

bool PlotWidget::exportPdf(const QString& path) {
  const QSize s = exportSize(plot_);
  return plot_->savePdf(path, s.width(), s.height(), QCP::epNoCosmetic, QStringLiteral("Tensorscope"),
                        exportName_);
}

QString PlotWidget::csvText() const {
  QString text;
  QTextStream out(&text);
  writeCsv(out);
  return text;
}

bool PlotWidget::exportCsv(const QString& path) const {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
  QTextStream out(&file);
  writeCsv(out);
  out.flush();
  return out.status() == QTextStream::Ok && file.error() == QFileDevice::NoError;
}

bool PlotWidget::eventFilter(QObject* watched, QEvent* event) {
  if (watched == shell_->scroll && event->type() == QEvent::Resize) viewportResized();
  if (watched == plot_ && event->type() == QEvent::Leave) {
    setHoverText(QString(), QPoint());
    hoverLeft();
  }
  return QWidget::eventFilter(watched, event);
}

void PlotWidget::showContextMenu(const QPoint& pos) {
  QMenu menu(this);
  addContextActions(menu);
  if (!menu.isEmpty()) menu.addSeparator();
  static QString dir = QDir::homePath();
  auto ask = [this](const QString& title, const QString& suffix) {
    const QString proposal = QDir(dir).filePath(exportName_ + QLatin1Char('.') + suffix);
    QString path = QFileDialog::getSaveFileName(this, title, proposal,
                                                suffix.toUpper() + QStringLiteral(" (*.") + suffix + ')');
    if (!path.isEmpty()) {
      if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + suffix;
      dir = QFileInfo(path).absolutePath();
    }
    return path;
  };
  auto report = [this](bool ok, const QString& path) {
    if (!ok) QToolTip::showText(QCursor::pos(), tr("Could not write %1").arg(path), this);
  };
  menu.addAction(tr("Export PNG…"), this, [=, this] {
    const QString path = ask(tr("Export PNG"), QStringLiteral("png"));
    if (path.isEmpty()) return;
    bool ok = false;
    const int dpi = QInputDialog::getInt(this, tr("Export PNG"), tr("Resolution (DPI):"), 192, 72, 1200, 24, &ok);
    if (ok) report(exportPng(path, dpi), path);
  });
  menu.addAction(tr("Export SVG…"), this, [=, this] {
    const QString path = ask(tr("Export SVG"), QStringLiteral("svg"));
    if (!path.isEmpty()) report(exportSvg(path), path);
  });
  menu.addAction(tr("Export PDF…"), this, [=, this] {
    const QString path = ask(tr("Export PDF"), QStringLiteral("pdf"));
    if (!path.isEmpty()) report(exportPdf(path), path);
  });
  menu.addSeparator();
  menu.addAction(tr("Export data (CSV)…"), this, [=, this] {
    const QString path = ask(tr("Export data"), QStringLiteral("csv"));
    if (!path.isEmpty()) report(exportCsv(path), path);
  });
  menu.exec(plot_->mapToGlobal(pos));
}

}  // namespace tensorscope::viz
