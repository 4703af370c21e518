#include "viz/plot_widget.h"

#include <QApplication>
#include <QCheckBox>
#include <algorithm>
#include <cmath>
#include <QBuffer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPageSize>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QScreen>
#include <QScrollArea>
#include <QStackedWidget>
#include <QSvgGenerator>
#include <QTextStream>
#include <QToolTip>
#include <QVBoxLayout>
#include <vector>

#include "files/atomic_file.h"
#include "plot_helpers.h"
#include "qcp.h"
#include "theme.h"

namespace tensorscope::viz {

struct PlotWidget::Shell {
  QWidget* controls = nullptr;
  QHBoxLayout* controlLayout = nullptr;
  QStackedWidget* stack = nullptr;
  QScrollArea* scroll = nullptr;  // only for scrollable plots
  QLabel* message = nullptr;
  double fontScale = 1.0;
  std::vector<std::function<void()>> fontUndo;  // puts back the fonts setFontScale scaled
};

namespace {
// A plot that was never laid out (a hidden dock) still exports at a useful size.
QSize exportSize(const QCustomPlot* plot) {
  const QSize s = plot->size().expandedTo(plot->minimumSize());
  return (s.width() < 160 || s.height() < 120) ? QSize(800, 500).expandedTo(s) : s;
}

// QCustomPlot measures text with fonts that know no device, i.e. at the application's logical
// DPI; a figure is laid out in units of that DPI so that measuring and drawing agree, and every
// output device is told the same resolution (the PNG's pixels are a scale of it).
double layoutDpi() {
  if (QCoreApplication::testAttribute(Qt::AA_Use96Dpi)) return 96;
  if (const QScreen* screen = QGuiApplication::primaryScreen()) return qRound(screen->logicalDotsPerInchY());
  return 96;
}

QFont withPointSize(QFont font, double pt) {
  font.setPointSizeF(pt);
  return font;
}

// Where an element sat in its layout, to put it back there.
std::function<void()> homeOf(QCPLayoutElement* element) {
  QCPLayout* home = element->layout();
  if (auto* grid = qobject_cast<QCPLayoutGrid*>(home)) {
    for (int i = 0; i < grid->elementCount(); ++i)
      if (grid->elementAt(i) == element) {
        int row = 0, col = 0;
        grid->indexToRowCol(i, row, col);
        return [grid, element, row, col] { grid->addElement(row, col, element); };
      }
  }
  if (auto* inset = qobject_cast<QCPLayoutInset*>(home)) {
    for (int i = 0; i < inset->elementCount(); ++i)
      if (inset->elementAt(i) == element) {
        if (inset->insetPlacement(i) == QCPLayoutInset::ipFree) {
          const QRectF rect = inset->insetRect(i);
          return [inset, element, rect] { inset->addElement(element, rect); };
        }
        const Qt::Alignment alignment = inset->insetAlignment(i);
        return [inset, element, alignment] { inset->addElement(element, alignment); };
      }
  }
  return [] {};
}

// Columns (rows for a vertical legend) such that the legend's items fit into `available` pixels.
int legendLinesThatFit(QCPLegend* legend, bool horizontal, double available) {
  const int n = legend->itemCount();
  if (n == 0) return 1;
  QList<QSize> sizes;
  for (int i = 0; i < n; ++i)
    if (QCPAbstractLegendItem* item = legend->item(i)) sizes << item->minimumOuterSizeHint();
  const int count = static_cast<int>(sizes.size());
  const QMargins m = legend->margins();
  if (horizontal) {
    for (int columns = count; columns > 1; --columns) {
      double width = m.left() + m.right() + (columns - 1) * legend->columnSpacing();
      for (int c = 0; c < columns; ++c) {
        int widest = 0;
        for (int i = c; i < count; i += columns) widest = std::max(widest, sizes[i].width());
        width += widest;
      }
      if (width <= available) return columns;
    }
    return 1;
  }
  int tallest = 1;
  for (const QSize& size : sizes) tallest = std::max(tallest, size.height());
  const double usable = available - m.top() - m.bottom() + legend->rowSpacing();
  return std::clamp(static_cast<int>(usable / (tallest + legend->rowSpacing())), 1, std::max(1, count));
}

// The physical size of a figure laid out at `size`: the options' size, or, for a view that chose
// its own layout size (the maps grid), the options' width with the height in proportion.
QSizeF physicalMm(const FigureOptions& o, const QSize& size, double dpi) {
  if (size == QSize(qRound(o.widthMm / 25.4 * dpi), qRound(o.heightMm / 25.4 * dpi))) return o.sizeMm();
  return {o.widthMm, o.widthMm * size.height() / std::max(1, size.width())};
}

PlotWidget::FigureOptionsProvider& provider() {
  static PlotWidget::FigureOptionsProvider p;
  return p;
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
  connect(plot_, &QCustomPlot::customContextMenuRequested, this,
          [this](const QPoint& pos) { showContextMenu(plot_->mapToGlobal(pos)); });
  // The message that replaces an empty plot has the menu too (its exports say why there is none).
  shell_->message->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(shell_->message, &QLabel::customContextMenuRequested, this,
          [this](const QPoint& pos) { showContextMenu(shell_->message->mapToGlobal(pos)); });
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

void PlotWidget::setFontScale(double scale) {
  if (!(scale > 0) || scale == shell_->fontScale) return;
  // Back to the fonts as they were, then scaled from those: scale 1 puts them back exactly.
  for (auto it = shell_->fontUndo.rbegin(); it != shell_->fontUndo.rend(); ++it) (*it)();
  shell_->fontUndo.clear();
  shell_->fontScale = scale;
  if (scale != 1.0) {
    const auto scaled = [scale](QFont f) {
      if (f.pointSizeF() > 0) f.setPointSizeF(f.pointSizeF() * scale);
      else if (f.pixelSize() > 0) f.setPixelSize(qRound(f.pixelSize() * scale));
      return f;
    };
    auto& undo = shell_->fontUndo;
    const auto scaleAxis = [&](QCPAxis* axis) {
      const QFont label = axis->labelFont(), ticks = axis->tickLabelFont();
      axis->setLabelFont(scaled(label));
      axis->setTickLabelFont(scaled(ticks));
      undo.push_back([axis, label, ticks] {
        axis->setLabelFont(label);
        axis->setTickLabelFont(ticks);
      });
    };
    for (QCPAxisRect* rect : plot_->axisRects())
      for (QCPAxis* axis : rect->axes()) scaleAxis(axis);
    for (QCPLayoutElement* element : plot_->plotLayout()->elements(true)) {
      if (auto* colourScale = qobject_cast<QCPColorScale*>(element)) {
        scaleAxis(colourScale->axis());
      } else if (auto* title = qobject_cast<QCPTextElement*>(element)) {
        const QFont font = title->font();
        title->setFont(scaled(font));
        undo.push_back([title, font] { title->setFont(font); });
      } else if (auto* legend = qobject_cast<QCPLegend*>(element)) {
        const QFont font = legend->font();
        legend->setFont(scaled(font));
        undo.push_back([legend, font] { legend->setFont(font); });
      }
    }
    for (int i = 0; i < plot_->itemCount(); ++i)
      if (auto* text = qobject_cast<QCPItemText*>(plot_->item(i))) {
        const QFont font = text->font();
        text->setFont(scaled(font));
        undo.push_back([text, font] { text->setFont(font); });
      }
    // The message that stands in for an empty plot ("Click a tensor …").
    QLabel* message = shell_->message;
    const bool own = message->testAttribute(Qt::WA_SetFont);
    const QFont font = message->font();
    message->setFont(scaled(font));
    undo.push_back([message, own, font] { message->setFont(own ? font : QFont()); });
  }
  fontScaleChanged();
  requestReplot();
}

double PlotWidget::fontScale() const { return shell_->fontScale; }

QFont PlotWidget::tickLabelFont() const { return plot_->xAxis ? plot_->xAxis->tickLabelFont() : font(); }

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
  // A check box's frame is its palette's window colour, darkened (Fusion): on the dark plot
  // background it would vanish, so it is drawn from the muted text colour there.
  for (QCheckBox* box : findChildren<QCheckBox*>()) {
    QPalette boxPalette = pal;
    if (dark_) boxPalette.setColor(QPalette::Window, t.mutedText);
    box->setPalette(boxPalette);
  }
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
  if (!hasFigure()) return failExport(tr("nothing to export: %1").arg(emptyReason()));
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
  if (!hasFigure()) return failExport(tr("nothing to export: %1").arg(emptyReason()));
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
  if (!hasFigure()) return failExport(tr("nothing to export: %1").arg(emptyReason()));
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

// --- Figures at a physical size ------------------------------------------------------------

void PlotWidget::setFigureOptionsProvider(FigureOptionsProvider p) { provider() = std::move(p); }

FigureOptions& PlotWidget::figureDefaults() {
  static FigureOptions defaults;
  return defaults;
}

QString PlotWidget::emptyReason() const {
  if (isShowingMessage()) {
    const QString text = shell_->message->text().simplified();
    return text.isEmpty() ? tr("nothing to show") : text;
  }
  for (int i = 0; i < plot_->plottableCount(); ++i) {
    QCPAbstractPlottable* p = plot_->plottable(i);
    if (!p->visible()) continue;
    if (auto* map = qobject_cast<QCPColorMap*>(p)) {
      if (!map->data()->isEmpty()) return {};
    } else if (p->interface1D() && p->interface1D()->dataCount() > 0) {
      return {};
    }
  }
  return tr("nothing plotted yet");
}

void PlotWidget::layOutNow() {
  for (auto phase : {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
    plot_->plotLayout()->update(phase);
}

QSize PlotWidget::beginFigure(const FigureOptions& options, const QSize& size) {
  Q_UNUSED(options);
  return size;
}

bool PlotWidget::figureShows(const QCPAbstractPlottable* plottable, const FigureOptions& options) const {
  const QVariant run = plottable->property("tsRun"), metric = plottable->property("tsMetric");
  if (!options.runs.isEmpty() && run.isValid() && !options.runs.contains(run.toString())) return false;
  if (!options.metrics.isEmpty() && metric.isValid() && !options.metrics.contains(metric.toString())) return false;
  return true;
}

bool PlotWidget::renderFigure(const FigureOptions& o, const std::function<bool(const QSize&, double)>& draw) {
  if (!hasFigure()) return failExport(tr("nothing to export: %1").arg(emptyReason()));
  if (!(o.widthMm >= 10 && o.widthMm <= 1000 && o.heightMm >= 10 && o.heightMm <= 1000))
    return failExport(tr("a figure must be 10 to 1000 mm wide and high (asked: %1 × %2 mm)").arg(o.widthMm).arg(o.heightMm));
  if (!(o.fontPt >= 4 && o.fontPt <= 40)) return failExport(tr("font size must be 4 to 40 pt (asked: %1)").arg(o.fontPt));
  if (!(o.dpi >= 50 && o.dpi <= 2400)) return failExport(tr("resolution must be 50 to 2400 dpi (asked: %1)").arg(o.dpi));
  const double dpi = layoutDpi();
  // Everything changed for the figure is put back in reverse order, also on an early return.
  std::vector<std::function<void()>> undo;
  struct Restore {
    std::vector<std::function<void()>>& steps;
    ~Restore() {
      for (auto it = steps.rbegin(); it != steps.rend(); ++it) (*it)();
    }
  } restore{undo};

  if (o.theme != FigureTheme::AsShown && (o.theme == FigureTheme::Dark) != dark_) {
    const bool was = dark_;
    setDarkTheme(o.theme == FigureTheme::Dark);
    undo.push_back([this, was] { setDarkTheme(was); });
  }
  const QSize size = beginFigure(o, QSize(qRound(o.widthMm / 25.4 * dpi), qRound(o.heightMm / 25.4 * dpi)));
  undo.push_back([this] { endFigure(); });

  // Runs and metrics left out (curves): their plottables and legend entries go for the figure.
  QCPLegend* legend = plot_->legend;
  QList<QCPAbstractLegendItem*> legendOrder;
  for (int i = 0; legend && i < legend->itemCount(); ++i) legendOrder << legend->item(i);
  bool legendChanged = false;
  for (int i = 0; i < plot_->plottableCount(); ++i) {
    QCPAbstractPlottable* p = plot_->plottable(i);
    if (!p->visible() || figureShows(p, o)) continue;
    p->setVisible(false);
    undo.push_back([p] { p->setVisible(true); });
    if (QCPPlottableLegendItem* item = legend ? legend->itemWithPlottable(p) : nullptr) {
      legend->take(item);
      item->setVisible(false);
      legendChanged = true;
    }
  }
  if (legendChanged) {
    legend->setFillOrder(legend->fillOrder(), true);  // closes the gaps
    undo.push_back([legend, legendOrder] {
      for (QCPAbstractLegendItem* item : legendOrder) legend->take(item);
      legend->simplify();
      for (QCPAbstractLegendItem* item : legendOrder) {
        item->setVisible(true);
        legend->addItem(item);
      }
      legend->setFillOrder(legend->fillOrder(), true);
    });
  }
  if (!hasFigure()) return failExport(tr("nothing to export: the selection leaves no data"));

  // Fonts in points: tick and axis labels and the legend at fontPt, titles 10% larger, notes 10%
  // smaller.
  const bool fonts = figureRestylesFonts();
  const auto styleAxis = [&](QCPAxis* axis) {
    if (!fonts) return;
    const QFont label = axis->labelFont(), ticks = axis->tickLabelFont();
    axis->setLabelFont(withPointSize(label, o.fontPt));
    axis->setTickLabelFont(withPointSize(ticks, o.fontPt));
    undo.push_back([axis, label, ticks] {
      axis->setLabelFont(label);
      axis->setTickLabelFont(ticks);
    });
  };
  for (QCPAxisRect* rect : plot_->axisRects())
    for (QCPAxis* axis : rect->axes()) styleAxis(axis);
  QList<QCPTextElement*> titles;
  for (QCPLayoutElement* element : plot_->plotLayout()->elements(true)) {
    if (auto* scale = qobject_cast<QCPColorScale*>(element)) {
      styleAxis(scale->axis());
    } else if (auto* title = qobject_cast<QCPTextElement*>(element)) {
      const QFont font = title->font();
      const QString text = title->text();
      if (fonts) title->setFont(withPointSize(font, o.fontPt * 1.1));
      title->setText(detail::wrapText(text, title->font(), size.width() - 12));
      titles << title;
      undo.push_back([title, font, text] {
        title->setFont(font);
        title->setText(text);
      });
    }
  }
  // Markers sized for a dock read as blots in a column-wide figure: two thirds of their size.
  for (int i = 0; i < plot_->graphCount(); ++i) {
    QCPGraph* graph = plot_->graph(i);
    const QCPScatterStyle style = graph->scatterStyle();
    if (style.isNone() || style.size() <= 5) continue;
    QCPScatterStyle smaller = style;
    smaller.setSize(std::max(4.0, style.size() * 2 / 3));
    graph->setScatterStyle(smaller);
    undo.push_back([graph, style] { graph->setScatterStyle(style); });
  }
  for (int i = 0; i < plot_->itemCount(); ++i)
    if (auto* text = fonts ? qobject_cast<QCPItemText*>(plot_->item(i)) : nullptr) {
      const QFont font = text->font();
      text->setFont(withPointSize(font, o.fontPt * 0.9));
      undo.push_back([text, font] { text->setFont(font); });
    }

  // The legend where the options put it, wrapped to fit the figure.
  const bool legendShown = legend && legend->visible() && legend->itemCount() > 0 && legend->item(0);
  if (legendShown) {
    const QFont font = legend->font();
    const int wrap = legend->wrap();
    const QCPLayoutGrid::FillOrder order = legend->fillOrder();
    const QMargins margins = legend->margins();
    const QSize icon = legend->iconSize();
    const int rowSpacing = legend->rowSpacing();
    legend->setFont(withPointSize(font, o.fontPt));
    // A compact legend: the icon in proportion to the type, tight margins.
    const double px = o.fontPt * dpi / 72.0;
    legend->setIconSize(qRound(px * 2), qRound(px * 1.3));
    legend->setMargins(QMargins(4, 2, 4, 2));
    legend->setRowSpacing(0);
    QList<std::pair<QCPAbstractLegendItem*, QMargins>> itemMargins;
    for (int i = 0; i < legend->itemCount(); ++i)
      if (QCPAbstractLegendItem* item = legend->item(i)) {
        itemMargins.append({item, item->margins()});
        item->setMargins(QMargins(2, 1, 4, 1));
      }
    undo.push_back([legend, font, wrap, order, margins, icon, rowSpacing, itemMargins] {
      legend->setFont(font);
      legend->setIconSize(icon);
      legend->setMargins(margins);
      legend->setRowSpacing(rowSpacing);
      for (const auto& [item, m] : itemMargins) item->setMargins(m);
      legend->setWrap(wrap);
      legend->setFillOrder(order, true);
    });
    if (o.legend == LegendPosition::None) {
      legend->setVisible(false);
      undo.push_back([legend] { legend->setVisible(true); });
    } else {
      auto putBack = homeOf(legend);
      if (legend->layout()) legend->layout()->take(legend);
      QCPLayoutGrid* main = plot_->plotLayout();
      QCPLayoutGrid* holder = nullptr;
      const bool horizontal = o.legend != LegendPosition::Right;
      if (o.legend == LegendPosition::Inside) {
        plot_->axisRect()->insetLayout()->addElement(legend, Qt::AlignTop | Qt::AlignRight);
      } else {
        holder = new QCPLayoutGrid;
        holder->setAutoMargins(QCP::msNone);
        holder->setRowSpacing(0);
        holder->setColumnSpacing(0);
        if (horizontal) {  // centred: spacer, legend, spacer
          const int row = o.legend == LegendPosition::Top ? 0 : main->rowCount();
          main->insertRow(row);
          main->addElement(row, 0, holder);
          main->setRowStretchFactor(row, 0.001);
          holder->setMargins(QMargins(4, o.legend == LegendPosition::Top ? 2 : 4, 4, 2));
          holder->addElement(0, 0, new QCPLayoutElement(plot_));
          holder->addElement(0, 1, legend);
          holder->addElement(0, 2, new QCPLayoutElement(plot_));
          holder->setColumnStretchFactors({1.0, 0.001, 1.0});
        } else {  // at the top of a new right column, level with the plot
          int row = 0;
          for (int r = 0; r < main->rowCount(); ++r)
            for (int c = 0; c < main->columnCount(); ++c)
              if (main->element(r, c) == plot_->axisRect()) row = r;
          const int col = main->columnCount();
          main->insertColumn(col);
          main->addElement(row, col, holder);
          main->setColumnStretchFactor(col, 0.001);
          holder->setMargins(QMargins(4, 8, 4, 0));
          holder->addElement(0, 0, legend);
          holder->addElement(1, 0, new QCPLayoutElement(plot_));
          holder->setRowStretchFactors({0.001, 1.0});
        }
      }
      const double room = o.legend == LegendPosition::Inside ? size.width() * 0.6
                          : horizontal                       ? size.width() - 16
                                                             : size.height() * 0.9;
      const int lines = legendLinesThatFit(legend, horizontal, room);
      legend->setWrap(lines);
      legend->setFillOrder(horizontal ? QCPLayoutGrid::foColumnsFirst : QCPLayoutGrid::foRowsFirst, true);
      undo.push_back([this, legend, holder, putBack] {
        if (legend->layout()) legend->layout()->take(legend);
        putBack();
        if (holder) {
          plot_->plotLayout()->remove(holder);
          plot_->plotLayout()->simplify();
        }
      });
    }
  }

  // Lay out at the figure's size (twice: views re-plan ticks for the new axis lengths), record
  // where the parts went, draw.
  const QRect viewport = plot_->viewport();
  undo.push_back([this, viewport] {
    plot_->setViewport(viewport);
    // Twice: views re-plan their tick labels after a layout (afterLayout), which moves margins.
    plot_->replot(QCustomPlot::rpImmediateRefresh);
    plot_->replot(QCustomPlot::rpImmediateRefresh);
  });
  plot_->setViewport(QRect(QPoint(0, 0), size));
  layOutNow();
  figureLaidOut();
  layOutNow();
  figureLayout_ = {};
  figureLayout_.figure = QRectF(QPointF(0, 0), QSizeF(size));
  if (legendShown && legend->visible()) {
    figureLayout_.legend = legend->outerRect();
    figureLayout_.legendColumns = legend->columnCount();
    figureLayout_.legendRows = legend->rowCount();
    for (int i = 0; i < legend->itemCount(); ++i) figureLayout_.legendItems += legend->item(i) ? 1 : 0;
  }
  for (QCPTextElement* title : titles) {
    if (title->text().isEmpty()) continue;
    const QFontMetricsF metrics(title->font());
    const QRectF box = metrics.boundingRect(QRectF(title->rect()), Qt::AlignCenter, title->text());
    figureLayout_.titles << box;
  }
  for (int i = 0; i < plot_->plottableCount(); ++i) {
    QCPAbstractPlottable* p = plot_->plottable(i);
    if (p->visible() && (qobject_cast<QCPColorMap*>(p) || (p->interface1D() && p->interface1D()->dataCount() > 0)))
      ++figureLayout_.plottablesDrawn;
  }
  for (QCPAxisRect* rect : plot_->axisRects()) {
    figureLayout_.axisRects << QRectF(rect->rect());
    figureLayout_.axisOuterRects << QRectF(rect->outerRect());
  }
  plot_->setViewport(viewport);
  return draw(size, dpi);
}

bool PlotWidget::exportPng(const QString& path, const FigureOptions& options) {
  QByteArray bytes;
  const bool drawn = renderFigure(options, [&](const QSize& size, double dpi) {
    const QSizeF mm = physicalMm(options, size, dpi);
    const QSize px(qRound(mm.width() / 25.4 * options.dpi), qRound(mm.height() / 25.4 * options.dpi));
    if (static_cast<double>(px.width()) * px.height() > 40e6)
      return failExport(tr("%1 × %2 px is too large a picture").arg(px.width()).arg(px.height()));
    QImage image(px, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) return failExport(tr("the picture is too large for memory at %1 dpi").arg(options.dpi));
    image.fill(theme().background);
    // Fonts are sized for the layout's DPI while drawing; the file then records the real DPI.
    image.setDotsPerMeterX(qRound(dpi / 0.0254));
    image.setDotsPerMeterY(qRound(dpi / 0.0254));
    {
      QCPPainter painter(&image);
      painter.setMode(QCPPainter::pmNonCosmetic);
      painter.scale(px.width() / static_cast<double>(size.width()), px.height() / static_cast<double>(size.height()));
      plot_->toPainter(&painter, size.width(), size.height());
    }
    image.setDotsPerMeterX(qRound(options.dpi / 0.0254));
    image.setDotsPerMeterY(qRound(options.dpi / 0.0254));
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    return image.save(&buffer, "PNG") || failExport(tr("cannot encode the PNG"));
  });
  return drawn && writeExport(path, bytes);
}

bool PlotWidget::exportSvg(const QString& path, const FigureOptions& options) {
  QByteArray bytes;
  const bool drawn = renderFigure(options, [&](const QSize& size, double dpi) {
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    QSvgGenerator generator;
    generator.setOutputDevice(&buffer);
    generator.setResolution(qRound(dpi));
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(0, 0), size));
    generator.setTitle(exportName_);
    generator.setDescription(QStringLiteral("Tensorscope figure"));
    QCPPainter painter;
    if (!painter.begin(&generator)) return failExport(tr("cannot start the SVG painter"));
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    painter.setMode(QCPPainter::pmNonCosmetic);
    plot_->toPainter(&painter, size.width(), size.height());
    painter.end();
    // The generator states width and height from whole layout units: state the exact size.
    const QSizeF mm = physicalMm(options, size, dpi);
    QString text = QString::fromUtf8(bytes);
    const qsizetype svg = text.indexOf(QLatin1String("<svg"));
    const qsizetype end = text.indexOf(QLatin1Char('>'), svg);
    if (svg >= 0 && end > svg) {
      QString head = text.mid(svg, end - svg);
      head.replace(QRegularExpression(QStringLiteral("\\bwidth=\"[^\"]*\"")),
                   QStringLiteral("width=\"%1mm\"").arg(mm.width(), 0, 'g', 8));
      head.replace(QRegularExpression(QStringLiteral("\\bheight=\"[^\"]*\"")),
                   QStringLiteral("height=\"%1mm\"").arg(mm.height(), 0, 'g', 8));
      text.replace(svg, end - svg, head);
      bytes = text.toUtf8();
    }
    return true;
  });
  return drawn && writeExport(path, bytes);
}

bool PlotWidget::exportPdf(const QString& path, const FigureOptions& options) {
  QByteArray bytes;
  const bool drawn = renderFigure(options, [&](const QSize& size, double dpi) {
    const QSizeF mm = physicalMm(options, size, dpi);
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter pdf(&buffer);
    pdf.setResolution(qRound(dpi));
    pdf.setPageSize(QPageSize(mm, QPageSize::Millimeter, QString(), QPageSize::ExactMatch));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setCreator(QStringLiteral("Tensorscope"));
    pdf.setTitle(exportName_);
    QCPPainter painter;
    if (!painter.begin(&pdf)) return failExport(tr("cannot start the PDF painter"));
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    painter.setMode(QCPPainter::pmNonCosmetic);
    painter.scale(pdf.width() / static_cast<double>(size.width()), pdf.height() / static_cast<double>(size.height()));
    plot_->toPainter(&painter, size.width(), size.height());
    painter.end();
    return true;
  });
  return drawn && writeExport(path, bytes);
}

bool PlotWidget::exportFigure(const QString& path, const FigureOptions& options) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("png")) return exportPng(path, options);
  if (suffix == QLatin1String("svg")) return exportSvg(path, options);
  if (suffix == QLatin1String("pdf")) return exportPdf(path, options);
  return failExport(tr("unknown figure format \"%1\" (png, svg or pdf)").arg(suffix));
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

void PlotWidget::showContextMenu(const QPoint& globalPos) {
  QMenu menu(this);
  if (!isShowingMessage()) addContextActions(menu);
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
  // An empty view says so instead of writing an empty picture.
  auto nothing = [this](const QString& title) {
    const QString text = tr("Nothing to export: %1").arg(emptyReason());
    if (QApplication::platformName() == QLatin1String("offscreen"))
      QToolTip::showText(QCursor::pos(), text, this);
    else
      QMessageBox::information(this, title, text);
  };
  auto figure = [=, this](const QString& format) {
    const QString title = tr("Export %1").arg(format.toUpper());
    if (!hasFigure()) return nothing(title);
    std::optional<FigureOptions> options;
    if (provider()) {
      options = provider()(*this, format);
    } else {
      options = figureDefaults();
      if (format == QLatin1String("png")) {
        bool ok = false;
        options->dpi = QInputDialog::getInt(this, title, tr("Resolution (DPI):"), qRound(options->dpi), 72, 1200, 50, &ok);
        if (!ok) return;
      }
    }
    if (!options) return;
    const QString path = ask(title, format);
    if (!path.isEmpty()) report(exportFigure(path, *options), path);
  };
  menu.addAction(tr("Export PNG…"), this, [=] { figure(QStringLiteral("png")); });
  menu.addAction(tr("Export SVG…"), this, [=] { figure(QStringLiteral("svg")); });
  menu.addAction(tr("Export PDF…"), this, [=] { figure(QStringLiteral("pdf")); });
  menu.addSeparator();
  menu.addAction(tr("Export data (CSV)…"), this, [=, this] {
    if (!hasFigure()) return nothing(tr("Export data"));
    const QString path = ask(tr("Export data"), QStringLiteral("csv"));
    if (!path.isEmpty()) report(exportCsv(path), path);
  });
  menu.exec(globalPos);
}

// --- FigureOptions -------------------------------------------------------------------------

double columnWidthMm(ColumnPreset preset) {
  switch (preset) {
    case ColumnPreset::Single: return 88;
    case ColumnPreset::OneAndHalf: return 120;
    case ColumnPreset::Double: return 180;
    case ColumnPreset::Custom: break;
  }
  return 88;
}

double columnHeightMm(ColumnPreset preset) {
  switch (preset) {
    case ColumnPreset::Single: return 66;
    case ColumnPreset::OneAndHalf: return 80;
    case ColumnPreset::Double: return 90;
    case ColumnPreset::Custom: break;
  }
  return 66;
}

FigureOptions FigureOptions::forColumn(ColumnPreset preset) {
  FigureOptions o;
  o.widthMm = columnWidthMm(preset);
  o.heightMm = columnHeightMm(preset);
  return o;
}

ColumnPreset FigureOptions::column() const {
  for (auto p : {ColumnPreset::Single, ColumnPreset::OneAndHalf, ColumnPreset::Double})
    if (std::abs(widthMm - columnWidthMm(p)) < 1e-6) return p;
  return ColumnPreset::Custom;
}

QSize FigureOptions::pixelSize() const {
  return {qRound(widthMm / 25.4 * dpi), qRound(heightMm / 25.4 * dpi)};
}

namespace {
template <typename E, std::size_t N>
std::optional<E> parseName(const QString& name, const std::pair<E, const char*> (&names)[N]) {
  for (const auto& [value, text] : names)
    if (name == QLatin1String(text)) return value;
  return std::nullopt;
}
template <typename E, std::size_t N>
QString nameOf(E value, const std::pair<E, const char*> (&names)[N]) {
  for (const auto& [v, text] : names)
    if (v == value) return QLatin1String(text);
  return {};
}
constexpr std::pair<LegendPosition, const char*> kLegendNames[] = {{LegendPosition::Top, "top"},
                                                                   {LegendPosition::Right, "right"},
                                                                   {LegendPosition::Bottom, "bottom"},
                                                                   {LegendPosition::Inside, "inside"},
                                                                   {LegendPosition::None, "none"}};
constexpr std::pair<ColumnPreset, const char*> kColumnNames[] = {{ColumnPreset::Single, "single"},
                                                                 {ColumnPreset::OneAndHalf, "one_and_half"},
                                                                 {ColumnPreset::Double, "double"},
                                                                 {ColumnPreset::Custom, "custom"}};
constexpr std::pair<FigureTheme, const char*> kThemeNames[] = {
    {FigureTheme::AsShown, "as_shown"}, {FigureTheme::Light, "light"}, {FigureTheme::Dark, "dark"}};
}  // namespace

QString toString(LegendPosition position) { return nameOf(position, kLegendNames); }
std::optional<LegendPosition> parseLegendPosition(const QString& name) { return parseName(name, kLegendNames); }
QString toString(ColumnPreset preset) { return nameOf(preset, kColumnNames); }
std::optional<ColumnPreset> parseColumnPreset(const QString& name) { return parseName(name, kColumnNames); }
QString toString(FigureTheme theme) { return nameOf(theme, kThemeNames); }
std::optional<FigureTheme> parseFigureTheme(const QString& name) { return parseName(name, kThemeNames); }

}  // namespace tensorscope::viz
