#include "viz/plot_widget.h"

#include <QBuffer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QPageSize>
#include <QPdfWriter>
#include <QScrollArea>
#include <QStackedWidget>
#include <QSvgGenerator>
#include <QTextStream>
#include <QToolTip>
#include <QVBoxLayout>

#include "files/atomic_file.h"
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

// Every export renders into memory first and reaches the disk in one atomic write
// (files::writeFileAtomically: a temporary file, fsync, rename): a full disk or an unwritable
// directory fails with the reason and leaves the previous file exactly as it was.
bool PlotWidget::writeExport(const QString& path, const QByteArray& bytes) const {
  try {
    files::writeFileAtomically(QFile::encodeName(path).toStdString(),
                              std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    exportError_.clear();
    return true;
  } catch (const std::exception& e) {
    exportError_ = QString::fromUtf8(e.what());
    return false;
  }
}

bool PlotWidget::failExport(const QString& why) const {
  exportError_ = why;
  return false;
}

bool PlotWidget::exportPng(const QString& path, double dpi) {
  const QSize s = exportSize(plot_);
  QImage image = plot_->toPixmap(s.width(), s.height(), dpi / 96.0).toImage();
  if (image.isNull()) return failExport(tr("the picture is too large for memory at %1 dpi").arg(dpi));
  const int dotsPerMeter = qRound(dpi / 0.0254);
  image.setDotsPerMeterX(dotsPerMeter);
  image.setDotsPerMeterY(dotsPerMeter);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) return failExport(tr("cannot encode the PNG"));
  return writeExport(path, bytes);
}

bool PlotWidget::exportSvg(const QString& path) {
  const QSize s = exportSize(plot_);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator generator;
  generator.setOutputDevice(&buffer);
  generator.setSize(s);
  generator.setViewBox(QRect(QPoint(0, 0), s));
  generator.setTitle(exportName_);
  generator.setDescription(QStringLiteral("Tensorscope figure"));
  QCPPainter painter;
  if (!painter.begin(&generator)) return failExport(tr("cannot start the SVG painter"));
  plot_->toPainter(&painter, s.width(), s.height());
  painter.end();
  return writeExport(path, bytes);
}

bool PlotWidget::exportPdf(const QString& path) {
  // As QCustomPlot::savePdf draws (vectorised, no caching, no cosmetic pens), one PDF point per
  // plot pixel, but into memory so that the file is written atomically.
  const QSize s = exportSize(plot_);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  {
    QPdfWriter pdf(&buffer);
    pdf.setResolution(72);
    pdf.setPageSize(QPageSize(QSizeF(s), QPageSize::Point, QString(), QPageSize::ExactMatch));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setCreator(QStringLiteral("Tensorscope"));
    pdf.setTitle(exportName_);
    QCPPainter painter;
    if (!painter.begin(&pdf)) return failExport(tr("cannot start the PDF painter"));
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    painter.setMode(QCPPainter::pmNonCosmetic);
    plot_->toPainter(&painter, s.width(), s.height());
    painter.end();
  }
  return writeExport(path, bytes);
}

QString PlotWidget::csvText() const {
  QString text;
  QTextStream out(&text);
  writeCsv(out);
  return text;
}

bool PlotWidget::exportCsv(const QString& path) const { return writeExport(path, csvText().toUtf8()); }

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
    if (!ok) QToolTip::showText(QCursor::pos(), tr("Could not write %1: %2").arg(path, exportError_), this);
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
