#pragma once
/// What the Design dock's source files share (design_panel.cpp, design_slots.cpp,
/// design_cost.cpp): number formatting and the MHSA baseline of the cost section. Internal to
/// gui/design.

#include <QString>
#include <QStringList>

#include <functional>
#include <string_view>

#include "spec/attention_spec.h"

class QSpinBox;

namespace tensorscope::app::design_parts {

/// A size box of 1 … max with `tip`, taking a typed value on Enter (not on every keystroke).
QSpinBox* sizeBox(int max, const QString& tip);
/// "1.5 KFLOP", "3 MiB" (base 1024 gives the binary prefixes).
QString human(double v, const QString& unit, double base = 1000.0);
/// value / base as "0.5×" ("∞×" where the base is 0).
QString ratio(double value, double base);
/// MHSA at the same width as `s` (F, H, D; D = F/H for variants without heads), what the cost
/// section compares with.
spec::AttentionSpec mhsaBaseline(const spec::AttentionSpec& s);
/// The names of an enum's `count` values, in order.
QStringList enumNames(int count, const std::function<std::string_view(int)>& name);

}  // namespace tensorscope::app::design_parts
