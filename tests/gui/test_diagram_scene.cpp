// The tensor-diagram scene: what is drawn for hand-made networks and for every preset.
#include <gtest/gtest.h>

#include <QGraphicsItem>
#include <QGraphicsTextItem>
#include <cmath>

#include "test_diagram_networks.h"
#include "diagram_view/diagram_layout.h"
#include "diagram_view/diagram_scene.h"
#include "spec/attention_spec.h"

using namespace tensorscope;
using diagram_view::DiagramScene;
using Element = DiagramScene::Element;

namespace {

struct Expected {
  int tensors = 0, hyperedges = 0, legs = 0, boxes = 0, balls = 0;
};

// What the scene must contain, counted from the network itself.
Expected expectedFor(const spec::TensorNetwork& net) {
  Expected e;
  e.tensors = static_cast<int>(net.nodes.size());
  for (const auto& d : diagram_view::drawnIndices(net)) {
    if (d.hyperedge()) e.hyperedges += 1, e.legs += static_cast<int>(d.ends.size()) + (d.output ? 1 : 0);
    else e.legs += 1;
  }
  for (const auto& n : net.nodes) e.legs += n.adds_to.empty() ? 0 : 1;
  e.boxes = static_cast<int>(net.boxes.size());
  for (const auto& b : net.boxes) e.balls += b.kind == spec::SoftmaxBox::Kind::Elementwise ? 0 : 1;
  return e;
}

void expectDrawn(const spec::TensorNetwork& net, const std::string& what) {
  DiagramScene scene;
  scene.setNetwork(net);
  const Expected e = expectedFor(net);
  EXPECT_EQ(scene.count(Element::Tensor), e.tensors) << what;
  EXPECT_EQ(scene.count(Element::Hyperedge), e.hyperedges) << what;
  EXPECT_EQ(scene.count(Element::Leg), e.legs) << what;
  EXPECT_EQ(scene.count(Element::SoftmaxBox), e.boxes) << what;
  EXPECT_EQ(scene.count(Element::SoftmaxBall), e.balls) << what;
  EXPECT_EQ(scene.count(Element::Title), net.title.empty() ? 0 : 1) << what;

  const auto& layout = scene.layout();
  // No two tensors overlap.
  for (size_t i = 0; i < layout.tensors.size(); ++i)
    for (size_t j = i + 1; j < layout.tensors.size(); ++j) {
      const auto& a = layout.tensors[i];
      const auto& b = layout.tensors[j];
      const double gap = std::hypot(a.center.x() - b.center.x(), a.center.y() - b.center.y());
      EXPECT_GE(gap, (a.width + b.width) / 2) << what << ": " << a.id << " overlaps " << b.id;
    }
  // Every box encloses exactly its tensors' circles.
  for (const auto& box : layout.boxes)
    for (const auto& t : layout.tensors) {
      const QRectF r(t.center.x() - t.width / 2, t.center.y() - t.height / 2, t.width, t.height);
      const bool member = std::find(box.tensors.begin(), box.tensors.end(), t.id) != box.tensors.end();
      EXPECT_EQ(box.rect.contains(r), member) << what << ": box " << box.id << (member ? " misses " : " holds ") << t.id;
    }
  // Balls sit on the box edge they belong to.
  for (const auto& box : layout.boxes)
    if (box.has_ball) {
      const QRectF grown = box.rect.adjusted(-1, -1, 1, 1), shrunk = box.rect.adjusted(1, 1, -1, -1);
      EXPECT_TRUE(grown.contains(box.ball) && !shrunk.contains(box.ball)) << what << ": ball of " << box.id;
    }
  EXPECT_TRUE(scene.contentRect().contains(scene.itemsBoundingRect())) << what;
}

}  // namespace

TEST(DiagramScene, HandMadeThsaHasTheFigureFourElements) {
  const auto net = diagram_test::smallThsa();
  expectDrawn(net, "small THSA");
  DiagramScene scene;
  scene.setNetwork(net);
  EXPECT_EQ(scene.count(Element::Hyperedge), 2);      // s and r
  EXPECT_EQ(scene.count(Element::SoftmaxBall), 1);    // on M
  EXPECT_EQ(scene.count(Element::ScaleLabel), 1);     // 1/√R
  ASSERT_EQ(scene.layout().boxes.size(), 1u);
  EXPECT_EQ(scene.layout().boxes[0].ball_text, "1/√R");
  int dangling = 0;
  for (const auto& leg : scene.layout().legs) dangling += leg.kind == diagram_view::LegPlacement::Kind::Dangling;
  EXPECT_EQ(dangling, 2);  // N of X^Q and F of W^O: the output's legs
}

TEST(DiagramScene, NestedBoxesBiasAndElementwiseOperation) {
  const auto net = diagram_test::nestedBoxes();
  expectDrawn(net, "nested");
  DiagramScene scene;
  scene.setNetwork(net);
  const auto& boxes = scene.layout().boxes;
  ASSERT_EQ(boxes.size(), 2u);
  const auto& outer = boxes[0].id == "outer" ? boxes[0] : boxes[1];
  const auto& inner = boxes[0].id == "outer" ? boxes[1] : boxes[0];
  EXPECT_TRUE(outer.rect.contains(inner.rect));
  EXPECT_EQ(inner.depth, 1);
  EXPECT_EQ(inner.label, "φ");  // the function's name; the hover has "φ = elu + 1"
  EXPECT_FALSE(inner.has_ball);
  EXPECT_TRUE(outer.has_ball);
  EXPECT_EQ(outer.ball_text, "normalise");
  int biasLinks = 0;
  for (const auto& leg : scene.layout().legs) biasLinks += leg.kind == diagram_view::LegPlacement::Kind::Bias;
  EXPECT_EQ(biasLinks, 1);
}

TEST(DiagramScene, EveryPresetRendersItsNetwork) {
  for (const auto& name : spec::specPresetNames()) {
    const auto s = spec::makeSpecPreset(name);
    expectDrawn(spec::buildTensorNetwork(s, 8), name);
  }
}

TEST(DiagramScene, CausalAndBiasVariantsRender) {
  for (const auto& name : spec::variantNames()) {
    auto s = spec::makeSpecPreset(name);
    s.bias = true;
    s.causal = true;
    expectDrawn(spec::buildTensorNetwork(s, 6), name + " (causal, bias)");
  }
}

TEST(DiagramScene, PaperStructureOfMhsaAndSkipRight) {
  DiagramScene mhsa;
  mhsa.setNetwork(spec::buildTensorNetwork(spec::makeSpecPreset("mhsa"), 8));
  EXPECT_EQ(mhsa.count(Element::Hyperedge), 1);  // H joins W^Q, W^K, W^V, W^O (Fig. 3b)
  EXPECT_EQ(mhsa.count(Element::SoftmaxBox), 1);
  EXPECT_EQ(mhsa.layout().boxes[0].ball_text, "1/√D");

  DiagramScene fixed;
  fixed.setNetwork(spec::buildTensorNetwork(spec::makeSpecPreset("fixed_head"), 8));
  for (QGraphicsItem* item : fixed.items()) {
    if (item->data(DiagramScene::kKindKey).toInt() == static_cast<int>(Element::ScaleLabel)) {
      EXPECT_EQ(static_cast<QGraphicsTextItem*>(item)->toPlainText(), "1/√dp");  // d_p: d with subscript p
    }
  }

  DiagramScene skip;
  skip.setNetwork(spec::buildTensorNetwork(spec::makeSpecPreset("skip_right"), 8));
  ASSERT_NE(skip.tensorItem("A"), nullptr);  // C₁ ⊗ 1·1ᵀ draws the trainable factor A
  EXPECT_EQ(skip.tensorItem("C"), nullptr);
  EXPECT_EQ(skip.count(Element::Hyperedge), 2);
}

TEST(DiagramScene, LegLabelsShowSymbolsOrSizes) {
  DiagramScene scene;
  scene.setNetwork(diagram_test::smallThsa());
  auto labels = [&] {
    QStringList out;
    for (QGraphicsItem* item : scene.items())
      if (item->data(DiagramScene::kKindKey).toInt() == static_cast<int>(Element::LegLabel))
        out << static_cast<QGraphicsTextItem*>(item)->toPlainText();
    out.sort();
    out.removeDuplicates();
    return out;
  };
  EXPECT_EQ(labels(), (QStringList{"F", "M", "N", "R"}));
  diagram_view::DiagramOptions o;
  o.show_sizes = true;
  scene.setOptions(o);
  EXPECT_EQ(labels(), (QStringList{"4", "5", "6"}));
}

TEST(DiagramScene, ThemesChangeTheBackground) {
  DiagramScene scene;
  scene.setNetwork(diagram_test::smallThsa());
  EXPECT_EQ(scene.backgroundBrush().color(), QColor(Qt::white));
  diagram_view::DiagramOptions o;
  o.theme = diagram_view::Theme::Dark;
  scene.setOptions(o);
  EXPECT_LT(scene.backgroundBrush().color().lightness(), 60);
  EXPECT_EQ(scene.count(Element::Tensor), 8);  // same drawing, other colours
}

TEST(DiagramScene, HoverTextDescribesShapeParametersAndRole) {
  DiagramScene scene;
  scene.setNetwork(diagram_test::smallThsa());
  const QGraphicsItem* core = scene.tensorItem("C");
  ASSERT_NE(core, nullptr);
  const QString tip = core->toolTip();
  EXPECT_TRUE(tip.contains("core")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("6 &times; 6")) << tip.toStdString();  // shape R × R = 6 × 6
  EXPECT_TRUE(tip.contains("36 trainable parameters")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("role of C")) << tip.toStdString();
  const QString input = scene.tensorItem("x_q")->toolTip();
  EXPECT_TRUE(input.contains("input") && input.contains("b")) << input.toStdString();
}

TEST(DiagramLayout, IsDeterministicAndCached) {
  const auto net = spec::buildTensorNetwork(spec::makeSpecPreset("thsa"), 8);
  const auto before = diagram_view::layoutCacheStats();
  const auto a = diagram_view::layoutNetwork(net, {});
  const auto b = diagram_view::layoutNetwork(net, {});
  const auto after = diagram_view::layoutCacheStats();
  EXPECT_GE(after.hits, before.hits + 1);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) EXPECT_EQ(a.tensors[i].center, b.tensors[i].center);
  EXPECT_EQ(a.dot, b.dot);
}
