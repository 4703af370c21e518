// TikZ export: a standalone LaTeX picture drawn from the same layout as the screen. The picture
// uses the scene's coordinates directly (x = 1pt, y = -1pt flips the scene's downward y axis).
#include <QString>
#include <algorithm>
#include <sstream>

#include "diagram_view/diagram_export.h"
#include "diagram_view/diagram_layout.h"
#include "label_text.h"

namespace tensorscope::diagram_view {
namespace {

std::string fmt(double v) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  s << (std::abs(v) < 0.005 ? 0.0 : v);
  return s.str();
}

// Built with append: GCC 12's -Wrestrict misfires on `"(" + std::string(...)`.
std::string pt(const QPointF& p) {
  std::string s(1, '(');
  s.append(fmt(p.x())).append(",").append(fmt(p.y())).push_back(')');
  return s;
}

std::string hex(const QColor& c) { return c.name(QColor::HexRgb).mid(1).toUpper().toStdString(); }

std::string pathCommand(const QPainterPath& path) {
  std::ostringstream s;
  for (int i = 0; i < path.elementCount(); ++i) {
    const auto e = path.elementAt(i);
    if (e.type == QPainterPath::MoveToElement) {
      s << pt(e);
    } else if (e.type == QPainterPath::LineToElement) {
      s << " -- " << pt(e);
    } else if (e.type == QPainterPath::CurveToElement && i + 2 < path.elementCount()) {
      s << " .. controls " << pt(e) << " and " << pt(path.elementAt(i + 1)) << " .. " << pt(path.elementAt(i + 2));
      i += 2;
    }
  }
  return s.str();
}

// The diameter Graphviz gave bias nodes (they are all the same size).
std::string placedBiasSize(const DiagramLayout& layout) {
  for (const auto& t : layout.tensors)
    if (t.bias) return fmt(t.width);
  return fmt(style::kTensorDiameter);
}

std::string mathLabel(const QString& label) {
  std::string s(1, '$');
  s.append(latexMath(label).toStdString()).push_back('$');
  return s;
}

}  // namespace

std::string diagramTikz(const spec::TensorNetwork& network, const DiagramOptions& options) {
  const DiagramLayout layout = layoutNetwork(network, options);
  const DiagramPalette p = paletteFor(options.theme);
  std::ostringstream t;
  t << "% Tensor diagram written by Tensorscope: " << latexText(QString::fromStdString(network.title)).toStdString() << "\n"
    << "% Compile with pdflatex (standalone, tikz, amssymb).\n"
    << "\\documentclass[tikz,border=6pt]{standalone}\n"
    << "\\usepackage{amsmath,amssymb}\n"
    << "\\usetikzlibrary{backgrounds}\n"
    << "\\definecolor{tsbg}{HTML}{" << hex(p.background) << "}\n"
    << "\\definecolor{tsink}{HTML}{" << hex(p.ink) << "}\n"
    << "\\definecolor{tstext}{HTML}{" << hex(p.text) << "}\n"
    << "\\definecolor{tsmuted}{HTML}{" << hex(p.muted_text) << "}\n"
    << "\\definecolor{tsinput}{HTML}{" << hex(p.input_fill) << "}\n"
    << "\\definecolor{tsweight}{HTML}{" << hex(p.weight_fill) << "}\n"
    << "\\definecolor{tscore}{HTML}{" << hex(p.core_fill) << "}\n"
    << "\\definecolor{tscoreline}{HTML}{" << hex(p.core_outline) << "}\n"
    << "\\definecolor{tsconst}{HTML}{" << hex(p.constant_fill) << "}\n"
    << "\\definecolor{tsop}{HTML}{" << hex(p.op_fill) << "}\n"
    << "\\definecolor{tsoutput}{HTML}{" << hex(p.output_fill) << "}\n"
    << "\\definecolor{tsbox}{HTML}{" << hex(p.box_outline) << "}\n"
    << "\\begin{document}\n"
    << "\\begin{tikzpicture}[x=1pt, y=-1pt, text=tstext,\n"
    << "  background rectangle/.style={fill=tsbg}, show background rectangle,\n"
    << "  tensor/.style={circle, draw=tsink, line width=" << style::kOutlineWidth << "pt, minimum size="
    << style::kTensorDiameter << "pt, inner sep=0pt, fill=tsweight, font=\\fontsize{"
    << style::kTensorFontSize << "}{" << style::kTensorFontSize + 2 << "}\\selectfont},\n"
    << "  input/.style={tensor, fill=tsinput},\n"
    << "  biasnode/.style={tensor, minimum size=" << placedBiasSize(layout) << "pt, font=\\small},\n"
    << "  core/.style={tensor, fill=tscore, draw=tscoreline, line width=" << style::kCoreOutlineWidth << "pt},\n"
    << "  constant/.style={tensor, fill=tsconst, dashed},\n"
    << "  output/.style={tensor, fill=tsoutput},\n"
    << "  op/.style={rectangle, rounded corners=2pt, draw=tsink, line width=" << style::kOutlineWidth
    << "pt, minimum size=" << style::kOpSide << "pt, inner sep=0pt, fill=tsop, font=\\small},\n"
    << "  leg/.style={draw=tsink, line width=" << style::kLineWidth << "pt, line cap=round},\n"
    << "  leglabel/.style={text=tsmuted, inner sep=0pt, font=\\fontsize{" << style::kLegFontSize << "}{"
    << style::kLegFontSize + 2 << "}\\selectfont},\n"
    << "  bias/.style={draw=tsmuted, dashed, line width=" << style::kLineWidth * 0.8 << "pt},\n"
    << "  elementwise/.style={draw=tsmuted, rounded corners=6pt, line width=" << style::kLineWidth * 0.8 << "pt},\n"
    << "  softmax/.style={draw=tsbox, dotted, line width=" << style::kLineWidth + 0.3 << "pt}]\n";

  for (const auto& b : layout.boxes) {
    const bool elementwise = b.kind == spec::SoftmaxBox::Kind::Elementwise;
    t << "\\draw[" << (elementwise ? "elementwise" : "softmax") << "] " << pt(b.rect.topLeft()) << " rectangle "
      << pt(b.rect.bottomRight()) << ";  % " << b.id << "\n";
    if (elementwise)
      t << "\\node[leglabel] at " << pt(b.label_pos) << " {" << latexText(b.label).toStdString() << "};\n";
  }
  for (const auto& l : layout.legs)
    t << "\\draw[" << (l.kind == LegPlacement::Kind::Bias ? "bias" : "leg") << "] " << pathCommand(l.path) << ";\n";
  for (const auto& h : layout.hyperedges) {
    t << "\\fill[tsink] " << pt(h.center) << " circle (" << fmt(style::kHyperedgeDot / 2) << "pt);\n";
    if (h.has_label) t << "\\node[leglabel] at " << pt(h.label_pos) << " {" << mathLabel(h.label) << "};\n";
  }
  for (const auto& placed : layout.tensors) {
    const auto it = std::find_if(network.nodes.begin(), network.nodes.end(), [&](const auto& n) { return n.id == placed.id; });
    if (it == network.nodes.end()) continue;
    std::string styleName = "tensor";
    if (placed.op_box) styleName = "op";
    else if (placed.bias) styleName = "biasnode";
    else if (isCoreNode(*it)) styleName = "core";
    else if (it->kind == spec::NodeKind::Input) styleName = "input";
    else if (it->kind == spec::NodeKind::Constant) styleName = "constant";
    else if (it->kind == spec::NodeKind::Output) styleName = "output";
    t << "\\node[" << styleName << "] at " << pt(placed.center) << " {" << mathLabel(QString::fromStdString(it->label))
      << "};  % " << it->id << "\n";
  }
  for (const auto& l : layout.legs) {
    if (!l.has_label) continue;
    t << "\\node[leglabel] at " << pt(l.label_pos) << " {" << mathLabel(l.label) << "};\n";
  }
  for (const auto& b : layout.boxes) {
    if (!b.has_ball) continue;
    const double r = style::kBallDiameter / 2;
    const bool open = b.kind == spec::SoftmaxBox::Kind::Normalize;
    t << (open ? "\\filldraw[fill=tsbg, draw=tsink, line width=1.4pt] " : "\\fill[tsink] ") << pt(b.ball) << " circle ("
      << fmt(r) << "pt);\n";
    if (b.ball_text.isEmpty()) continue;
    t << "\\node[leglabel, text=tstext] at " << pt(b.ball_text_rect.center()) << " {"
      << latexText(b.ball_text).toStdString() << "};\n";
  }
  if (options.show_title && (!network.title.empty() || !network.equation.empty())) {
    const double width = std::max(layout.bounds.width(), 420.0);
    t << "\\node[anchor=south west, align=left, inner sep=0pt, text width=" << fmt(width) << "pt] at "
      << pt(QPointF(layout.bounds.left(), layout.bounds.top() - 8)) << " {";
    if (!network.title.empty()) t << "\\textbf{" << latexText(QString::fromStdString(network.title)).toStdString() << "}";
    if (!network.title.empty() && !network.equation.empty()) t << "\\\\[2pt]";
    if (!network.equation.empty())
      t << "{\\small\\color{tsmuted}" << latexText(QString::fromStdString(network.equation)).toStdString() << "}";
    t << "};\n";
  }
  t << "\\end{tikzpicture}\n\\end{document}\n";
  return t.str();
}

}  // namespace tensorscope::diagram_view
