#include "curve_series.h"

#include <QFontMetrics>
#include <algorithm>
#include <array>
#include <cmath>

namespace tensorscope::viz {

bool CurvesPlot::Series::hasOwnTimes() const {
  return std::any_of(times.begin(), times.end(), [](double t) { return std::isfinite(t); });
}

double CurvesPlot::Series::next(double value, double weight) {
  if (!smoothed(weight)) return value;
  if (!std::isfinite(value)) return std::numeric_limits<double>::quiet_NaN();  // a gap; state kept
  ema = std::isfinite(ema) ? weight * ema + (1.0 - weight) * value : value;
  return ema;
}

bool CurvesPlot::Series::append(double step, double value, double time, double weight) {
  bool cut = false;
  if (!steps.empty() && step <= steps.back()) {
    const auto at = std::lower_bound(steps.begin(), steps.end(), step) - steps.begin();
    steps.resize(at);
    values.resize(at);
    times.resize(at);
    recompute(weight);
    cut = true;
  }
  steps.push_back(step);
  values.push_back(value);
  times.push_back(time);
  shown.push_back(next(value, weight));
  return !cut;
}

void CurvesPlot::Series::recompute(double weight) {
  ema = std::numeric_limits<double>::quiet_NaN();
  shown.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) shown[i] = next(values[i], weight);
}

void CurvesPlot::Series::fill(const std::vector<double>& keys) {
  QVector<double> k, y, r;
  k.reserve(static_cast<qsizetype>(keys.size()));
  y.reserve(k.capacity());
  r.reserve(k.capacity());
  for (std::size_t i = 0; i < keys.size() && i < shown.size(); ++i) {
    if (!std::isfinite(keys[i])) continue;
    k.push_back(keys[i]);
    y.push_back(shown[i]);
    r.push_back(values[i]);
  }
  line->setData(k, y, true);
  raw->setData(k, r, true);
}

namespace detail {

quint32 stableHash(const QString& text) {
  quint32 h = 2166136261u;
  for (const QChar c : text) {
    h ^= c.unicode();
    h *= 16777619u;
  }
  return h;
}

std::pair<QString, QString> splitMetricName(const QString& metric) {
  const QString m = metric.trimmed();
  const auto open = m.lastIndexOf(QLatin1String(" ("));
  if (open > 0 && m.endsWith(QLatin1Char(')'))) return {m.left(open), m.mid(open + 2, m.size() - open - 3).trimmed()};
  return {m, QString()};
}

MetricStyle metricStyle(const QString& metric) {
  // "eval loss (interpolation)": family "eval loss", split "interpolation".
  auto [base, split] = splitMetricName(metric.toLower());
  MetricStyle s;
  bool evaluation = !split.isEmpty();
  if (base == QLatin1String("lr") || base == QLatin1String("learning rate")) {
    s.dashes = {7, 2.5, 1.5, 2.5};  // dash-dot
    evaluation = false;
  } else if (CurvesPlot::isAccuracyLike(base)) {
    s.dashes = {1.2, 1.8};  // dotted
    evaluation = true;
  } else if (base == QLatin1String("train loss") || base == QLatin1String("loss")) {
    evaluation = false;  // solid
  } else if (base.contains(QLatin1String("loss"))) {
    s.dashes = {5, 3};  // dashed
    evaluation = true;
  } else {
    static const std::array<QVector<qreal>, 4> kOthers = {
        QVector<qreal>{10, 3}, QVector<qreal>{5, 2, 1.5, 2, 1.5, 2}, QVector<qreal>{2, 4}, QVector<qreal>{12, 3, 3, 3}};
    s.dashes = kOthers[stableHash(base) % kOthers.size()];
  }
  if (evaluation) {
    if (split.isEmpty() || split == QLatin1String("interpolation") || split == QLatin1String("validation") ||
        split == QLatin1String("val") || split == QLatin1String("test"))
      s.marker = QCPScatterStyle::ssDisc;
    else if (split == QLatin1String("extrapolation") || split == QLatin1String("ood"))
      s.marker = QCPScatterStyle::ssTriangle;
    else
      s.marker = stableHash(split) % 2 ? QCPScatterStyle::ssSquare : QCPScatterStyle::ssDiamond;
  }
  return s;
}

QPen metricPen(const MetricStyle& style, const QColor& colour, double width) {
  QPen pen(colour, width, Qt::SolidLine, Qt::FlatCap, Qt::RoundJoin);
  if (!style.dashes.isEmpty()) pen.setDashPattern(style.dashes);
  return pen;
}

// ---- CurvesLegend ----------------------------------------------------------------------------

CurvesLegend::Spacing CurvesLegend::spacing() const {
  // The dock's: swatch length, swatch to text, between entries, between the runs and the metrics
  // on one line. A figure's are tighter: a journal column has no width to spare.
  return compact_ ? Spacing{20, 4, 10, 14} : Spacing{28, 5, 16, 28};
}

CurvesLegend::CurvesLegend(QCustomPlot* plot) : QCPLayoutElement(plot) {
  setLayer(QStringLiteral("legend"));  // above the curves when it sits inside the plot
  setAutoMargins(QCP::msNone);
  setMargins(QMargins(10, 4, 10, 2));
  setLayer(QStringLiteral("legend"));
}

void CurvesLegend::setEntries(std::vector<Entry> entries) { entries_ = std::move(entries); }

QFont CurvesLegend::font() const { return mParentPlot->legend->font(); }

int CurvesLegend::rowHeight(const QFontMetrics& fm) const { return fm.height() + (compact_ ? 1 : 3); }

void CurvesLegend::setCompact(bool compact) {
  compact_ = compact;
  setMargins(compact ? QMargins(4, 2, 4, 0) : QMargins(10, 4, 10, 2));
}

int CurvesLegend::entryWidth(const QFontMetrics& fm, const Entry& e) const {
  const Spacing sp = spacing();
  return sp.swatch + sp.swatchGap + fm.horizontalAdvance(e.text);
}

void CurvesLegend::layoutFor(int width, int maxHeight) {
  positions_.clear();
  rows_ = shown_ = 0;
  height_ = 0;
  moreText_.clear();
  if (entries_.empty()) return;
  const QFontMetrics fm(font());
  const int rowH = rowHeight(fm);
  const int maxRows = std::max(1, maxHeight / rowH);
  const Spacing sp = spacing();
  // Everything on one line when it fits; else the runs, then the metrics from a new line.
  int total = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (i > 0) total += entries_[i].group != entries_[i - 1].group ? sp.groupGap : sp.entryGap;
    total += entryWidth(fm, entries_[i]);
  }
  const bool oneLine = total <= width;
  width_ = 0;
  for (const auto& e : entries_) width_ = std::max(width_, entryWidth(fm, e));
  int x = 0, row = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const int w = entryWidth(fm, entries_[i]);
    if (i > 0) {
      const bool groupBreak = entries_[i].group != entries_[i - 1].group;
      const bool runsEnd = entries_[i - 1].group == Entry::Run && groupBreak;
      const int gap = groupBreak ? sp.groupGap : sp.entryGap;
      if (vertical_ || (runsEnd && !oneLine && !compact_) || x + gap + w > width) {
        ++row;
        x = 0;
      } else {
        x += gap;
      }
    }
    if (row >= maxRows) break;
    positions_.emplace_back(x, row * rowH);
    x += w;
    ++shown_;
  }
  rows_ = std::min(row + 1, maxRows);
  if (shown_ < static_cast<int>(entries_.size())) {
    // Too many for the share of the plot the legend may take: say how many are left out, on the
    // last row, in place of entries when needed.
    const auto more = [&](int n) { return QStringLiteral("+%1 more").arg(n); };
    while (shown_ > 0) {
      const QPoint last = positions_.back();
      const int end = last.x() + entryWidth(fm, entries_[static_cast<std::size_t>(shown_ - 1)]);
      const QString text = more(static_cast<int>(entries_.size()) - shown_);
      if (last.y() / rowH < rows_ - 1 || end + sp.entryGap + fm.horizontalAdvance(text) <= width) {
        morePos_ = last.y() / rowH < rows_ - 1 ? QPoint(0, (rows_ - 1) * rowH) : QPoint(end + sp.entryGap, last.y());
        moreText_ = text;
        break;
      }
      positions_.pop_back();
      --shown_;
    }
    if (shown_ == 0) {
      moreText_ = more(static_cast<int>(entries_.size()));
      morePos_ = QPoint(0, 0);
    }
  }
  height_ = rows_ * rowH;
}

void CurvesLegend::update(UpdatePhase phase) {
  if (phase == upPreparation) {
    const QRect viewport = mParentPlot->viewport();
    const int width = viewport.width() - mMargins.left() - mMargins.right();
    // Vertical (beside or inside the plot): the whole height; above or below: a share of it.
    layoutFor(std::max(40, width), static_cast<int>((vertical_ ? 0.95 : maxHeightFraction_) * viewport.height()));
  }
  QCPLayoutElement::update(phase);
  if (phase == upLayout) {
    rects_.clear();
    const QFontMetrics fm(font());
    const QPoint origin = mRect.topLeft() + QPoint(vertical_ ? std::max(0, mRect.width() - width_) : 0, 0);
    for (int i = 0; i < shown_; ++i)
      rects_.emplace_back(origin + positions_[static_cast<std::size_t>(i)],
                          QSize(entryWidth(fm, entries_[static_cast<std::size_t>(i)]), rowHeight(fm)));
  }
}

QSize CurvesLegend::minimumOuterSizeHint() const {
  const int height = entries_.empty() ? 0 : height_ + mMargins.top() + mMargins.bottom();
  return QSize(vertical_ && !entries_.empty() ? width_ + mMargins.left() + mMargins.right() : 0, height);
}

QSize CurvesLegend::maximumOuterSizeHint() const {
  const int height = entries_.empty() ? 0 : height_ + mMargins.top() + mMargins.bottom();
  if (vertical_) return QSize(entries_.empty() ? 0 : width_ + mMargins.left() + mMargins.right(), QWIDGETSIZE_MAX);
  return QSize(QWIDGETSIZE_MAX, height);
}

void CurvesLegend::applyDefaultAntialiasingHint(QCPPainter* painter) const {
  applyAntialiasingHint(painter, true, QCP::aeLegendItems);
}

void CurvesLegend::draw(QCPPainter* painter) {
  if (entries_.empty()) return;
  const QFont f = font();
  const QFontMetrics fm(f);
  const int rowH = rowHeight(fm);
  const QColor text = mParentPlot->legend->textColor();
  // A vertical legend is right-aligned in its rectangle (inside the plot: against the right edge).
  const QPoint origin = mRect.topLeft() + QPoint(vertical_ ? std::max(0, mRect.width() - width_) : 0, 0);
  if (fill_.isValid()) painter->fillRect(QRect(origin - QPoint(4, 2), QSize(width_ + 8, height_ + 4)), fill_);
  painter->setFont(f);
  const Spacing sp = spacing();
  for (int i = 0; i < shown_; ++i) {
    const Entry& e = entries_[static_cast<std::size_t>(i)];
    const QPoint at = origin + positions_[static_cast<std::size_t>(i)];
    const double mid = at.y() + rowH / 2.0;
    QPen pen = e.pen;
    if (e.group == Entry::Run) {
      pen.setStyle(Qt::SolidLine);
      pen.setWidthF(3.0);
      pen.setCapStyle(Qt::FlatCap);
    }
    painter->setPen(pen);
    if (e.group != Entry::Split) painter->drawLine(QLineF(at.x() + 1, mid, at.x() + sp.swatch - 1, mid));
    if (e.marker != QCPScatterStyle::ssNone) {
      QCPScatterStyle marker(e.marker, pen.color(), pen.color(), 6);
      marker.applyTo(painter, QPen(pen.color(), 1.2));
      marker.drawShape(painter, QPointF(at.x() + sp.swatch / 2.0, mid));
    }
    painter->setPen(text);
    // Plain text: an underscore or an ampersand in a run name is drawn as written (no mnemonic).
    painter->drawText(QRect(at.x() + sp.swatch + sp.swatchGap, at.y(), fm.horizontalAdvance(e.text) + 4, rowH),
                      Qt::AlignLeft | Qt::AlignVCenter | Qt::TextSingleLine, e.text);
  }
  if (!moreText_.isEmpty()) {
    QColor muted = text;
    muted.setAlphaF(0.7f);
    painter->setPen(muted);
    const QPoint at = origin + morePos_;
    painter->drawText(QRect(at.x(), at.y(), fm.horizontalAdvance(moreText_) + 4, rowH),
                      Qt::AlignLeft | Qt::AlignVCenter | Qt::TextSingleLine, moreText_);
  }
}

}  // namespace detail
}  // namespace tensorscope::viz
