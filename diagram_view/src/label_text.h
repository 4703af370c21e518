#pragma once
// Label text in the three markups the diagram is written in: rich text for Qt, HTML-like labels
// for Graphviz, LaTeX for TikZ. Labels use a small TeX-like syntax ("W^Q", "c_2", "W^{QK}") and
// Unicode math ("C₁", "1/√D", "⊙", "φ", "1·1ᵀ").

#include <QString>

namespace tensorscope::diagram_view {

/// Qt rich text: "W^Q" -> "W<sup>Q</sup>", with &, <, > escaped. `upperTags` writes <SUP>/<SUB>
/// (Graphviz HTML-like labels).
QString labelHtml(const QString& label, bool upperTags = false);

/// LaTeX math-mode body: "W^Q" -> "W^{Q}", "1/√D" -> "1/\sqrt{D}", "C₁" -> "C_{1}".
QString latexMath(const QString& label);

/// LaTeX text: specials escaped, mathematical characters wrapped in $...$.
QString latexText(const QString& text);

/// Escapes a string for a double-quoted DOT attribute.
QString dotQuoted(const QString& text);

}  // namespace tensorscope::diagram_view
