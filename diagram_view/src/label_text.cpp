#include "label_text.h"

#include <QHash>
#include <optional>

namespace tensorscope::diagram_view {
namespace {

// The token after '√': a (group), a {group}, a run of ASCII letters and digits, or one character.
// Returns the token and advances `i` past it.
QString takeToken(const QString& s, int& i) {
  if (i >= s.size()) return {};
  const QChar open = s[i];
  if (open == '{' || open == '(') {
    const QChar close = open == '{' ? QChar('}') : QChar(')');
    int depth = 0;
    const int start = i + 1;
    for (; i < s.size(); ++i) {
      if (s[i] == open) ++depth;
      if (s[i] == close && --depth == 0) break;
    }
    const QString body = s.mid(start, i - start);
    ++i;
    return body;
  }
  const int start = i;
  while (i < s.size() && s[i].unicode() < 0x80 && s[i].isLetterOrNumber()) ++i;
  if (i > start) return s.mid(start, i - start);
  return QString(s[i++]);
}

bool asciiAlnum(QChar c) { return c.unicode() < 0x80 && c.isLetterOrNumber(); }

// At s[i] == '^' or '_': a script is "^{...}" or one letter or digit that no ASCII letter or
// digit follows ("W^Q", "Q_h", "head_1", "Σ_s"), so identifiers such as "skip_left" stay as
// they are. Returns the body and sets `next` past it.
std::optional<QString> script(const QString& s, int i, int& next) {
  if (i + 1 >= s.size() || (s[i] != '^' && s[i] != '_')) return std::nullopt;
  if (s[i + 1] == '{') {
    const int close = s.indexOf('}', i + 2);
    if (close < 0) return std::nullopt;
    next = close + 1;
    return s.mid(i + 2, close - i - 2);
  }
  if (!s[i + 1].isLetterOrNumber() || (i + 2 < s.size() && asciiAlnum(s[i + 2]))) return std::nullopt;
  next = i + 2;
  return QString(s[i + 1]);
}

QString htmlEscaped(QChar c) {
  if (c == '&') return "&amp;";
  if (c == '<') return "&lt;";
  if (c == '>') return "&gt;";
  return QString(c);
}

const QHash<QChar, QString>& mathCommands() {
  static const QHash<QChar, QString> table = {
      {QChar(0x2299), "\\odot "},   {QChar(0x2297), "\\otimes "}, {QChar(0x03C6), "\\varphi "},
      {QChar(0x03D5), "\\phi "},    {QChar(0x03B1), "\\alpha "},  {QChar(0x03B2), "\\beta "},
      {QChar(0x03C3), "\\sigma "},  {QChar(0x03A3), "\\Sigma "},  {QChar(0x2211), "\\sum "},
      {QChar(0x03A9), "\\Omega "},  {QChar(0x03C9), "\\omega "},  {QChar(0x03BB), "\\lambda "},
      {QChar(0x03B5), "\\varepsilon "}, {QChar(0x03B3), "\\gamma "}, {QChar(0x03B8), "\\theta "},
      {QChar(0x03BC), "\\mu "},     {QChar(0x03C0), "\\pi "},     {QChar(0x03C4), "\\tau "},
      {QChar(0x03C8), "\\psi "},    {QChar(0x03A6), "\\Phi "},    {QChar(0x0394), "\\Delta "},
      {QChar(0x00B7), "\\cdot "},   {QChar(0x22C5), "\\cdot "},   {QChar(0x00D7), "\\times "},
      {QChar(0x2208), "\\in "},     {QChar(0x211D), "\\mathbb{R}"}, {QChar(0x2192), "\\to "},
      {QChar(0x2264), "\\le "},     {QChar(0x2265), "\\ge "},     {QChar(0x2212), "-"},
      {QChar(0x2016), "\\|"},       {QChar(0x22A4), "\\top "},    {QChar(0x2218), "\\circ "},
      {QChar(0x221E), "\\infty "},  {QChar(0x2026), "\\dots "},   {QChar(0x2248), "\\approx "},
      {QChar(0x27E8), "\\langle "}, {QChar(0x27E9), "\\rangle "}, {QChar(0x2032), "'"},
      {QChar(0x1D40), "^{\\top}"},  {QChar(0x207B), "^{-}"},      {QChar(0x00B9), "^{1}"},
      {QChar(0x00B2), "^{2}"},      {QChar(0x00B3), "^{3}"},      {QChar(0x1D62), "_{i}"},
      {QChar(0x2C7C), "_{j}"},      {QChar(0x2099), "_{n}"},      {QChar(0x2098), "_{m}"},
      {QChar(0x1D63), "_{r}"},      {QChar(0x209A), "_{p}"},      {QChar(0x2095), "_{h}"},
      {QChar(0x2096), "_{k}"},      {QChar(0x209B), "_{s}"},      {QChar(0x209C), "_{t}"},
  };
  return table;
}

// Math-mode LaTeX for one non-ASCII character, or an empty string if unknown.
QString mathFor(QChar c) {
  const ushort u = c.unicode();
  if (u >= 0x2080 && u <= 0x2089) return QString("_{%1}").arg(u - 0x2080);
  if (u >= 0x2070 && u <= 0x2079 && u != 0x2071 && u != 0x2072 && u != 0x2073)
    return QString("^{%1}").arg(u - 0x2070);
  return mathCommands().value(c);
}

bool isMathChar(QChar c) { return c == QChar(0x221A) || !mathFor(c).isEmpty(); }

}  // namespace

QString labelHtml(const QString& label, bool upperTags) {
  const QString sup = upperTags ? "SUP" : "sup";
  const QString sub = upperTags ? "SUB" : "sub";
  QString out;
  for (int i = 0; i < label.size();) {
    int next = i;
    if (const auto body = script(label, i, next)) {
      const QString tag = label[i] == '^' ? sup : sub;
      out += "<" + tag + ">" + labelHtml(*body, upperTags) + "</" + tag + ">";
      i = next;
      continue;
    }
    const QChar c = label[i++];
    // ᵀ is missing from some faces (DejaVu Serif Bold draws another glyph): write a real superscript.
    if (c == QChar(0x1D40)) out += "<" + sup + ">T</" + sup + ">";
    else out += htmlEscaped(c);
  }
  return out;
}

QString latexMath(const QString& label) {
  QString out;
  for (int i = 0; i < label.size();) {
    int next = i;
    if (const auto body = script(label, i, next)) {
      out += QString(label[i]) + "{" + latexMath(*body) + "}";
      i = next;
      continue;
    }
    const QChar c = label[i++];
    if (c == QChar(0x221A)) {  // √x, √(x+y)
      out += "\\sqrt{" + latexMath(takeToken(label, i)) + "}";
    } else if (c.unicode() >= 0x80) {
      const QString m = mathFor(c);
      out += m.isEmpty() ? QString("?") : m;
    } else if (c == '\\') {
      out += "\\backslash ";
    } else if (c == '#' || c == '%' || c == '&' || c == '$' || c == '_') {
      out += QString("\\") + c;
    } else if (c == '^') {
      out += "\\hat{}";
    } else if (c == '~') {
      out += "\\sim ";
    } else {
      out += c;
    }
  }
  return out;
}

QString latexText(const QString& text) {
  QString out, math;
  auto flush = [&] {
    if (!math.isEmpty()) out += "$" + math + "$";
    math.clear();
  };
  for (int i = 0; i < text.size();) {
    const QChar c = text[i];
    int next = i;
    if (script(text, i, next)) {
      math += latexMath(text.mid(i, next - i));
      i = next;
      continue;
    }
    if (c.unicode() >= 0x80 && isMathChar(c)) {
      int j = i + 1;
      if (c == QChar(0x221A)) takeToken(text, j);
      math += latexMath(text.mid(i, j - i));
      i = j;
      continue;
    }
    flush();
    ++i;
    if (c.unicode() >= 0x80) out += c == QChar(0x2013) ? "--" : c == QChar(0x2014) ? "---" : "?";
    else if (c == '\\') out += "\\textbackslash{}";
    else if (c == '^') out += "\\^{}";
    else if (c == '~') out += "\\~{}";
    else if (QString("{}#$%&_").contains(c)) out += QString("\\") + c;
    else out += c;
  }
  flush();
  return out;
}

QString dotQuoted(const QString& text) {
  QString out = "\"";
  for (QChar c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace tensorscope::diagram_view
