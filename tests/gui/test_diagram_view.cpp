// The interactive diagram widget, offscreen: clicking the core, zooming, panning, rebuilding.
#include <gtest/gtest.h>

#include <QApplication>
#include <QGraphicsItem>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTest>
#include <QWheelEvent>

#include "test_diagram_networks.h"
#include "diagram_view/diagram_view.h"
#include "spec/attention_spec.h"

using namespace tensorscope;
using diagram_view::DiagramView;

namespace {

// A shown, exposed view of `net`.
struct ShownView {
  DiagramView view;
  explicit ShownView(const spec::TensorNetwork& net) {
    view.resize(900, 650);
    view.show();
    EXPECT_TRUE(QTest::qWaitForWindowExposed(&view));
    view.setNetwork(net);
  }
  QPoint at(const QString& id) {
    const QGraphicsItem* item = view.diagramScene()->tensorItem(id);
    EXPECT_NE(item, nullptr) << id.toStdString();
    return item ? view.mapFromScene(item->scenePos()) : QPoint();
  }
};

}  // namespace

TEST(DiagramView, ClickingTheCoreEmitsCoreSelected) {
  ShownView v(diagram_test::smallThsa());
  QSignalSpy core(&v.view, &DiagramView::coreSelected);
  QSignalSpy tensor(&v.view, &DiagramView::tensorSelected);
  QTest::mouseClick(v.view.viewport(), Qt::LeftButton, {}, v.at("Wq"));
  EXPECT_EQ(core.count(), 0);
  ASSERT_EQ(tensor.count(), 1);
  EXPECT_EQ(tensor.at(0).at(0).toString(), "Wq");
  QTest::mouseClick(v.view.viewport(), Qt::LeftButton, {}, v.at("C"));
  ASSERT_EQ(core.count(), 1);
  EXPECT_EQ(core.at(0).at(0).toString(), "C");
}

TEST(DiagramView, ClickingAKroneckerFactorEmitsCoreSelected) {
  ShownView v(spec::buildTensorNetwork(spec::makeSpecPreset("skip_left"), 8));
  QSignalSpy core(&v.view, &DiagramView::coreSelected);
  QTest::mouseClick(v.view.viewport(), Qt::LeftButton, {}, v.at("c2"));
  ASSERT_EQ(core.count(), 1);
  EXPECT_EQ(core.at(0).at(0).toString(), "c2");
}

TEST(DiagramView, ZoomsWithKeysAndWheelWithinLimits) {
  ShownView v(diagram_test::smallThsa());
  const double fitted = v.view.zoom();
  EXPECT_GT(fitted, 0.2);
  QTest::keyClick(&v.view, Qt::Key_Equal, Qt::ControlModifier);
  EXPECT_NEAR(v.view.zoom(), fitted * 1.25, 1e-9);
  QTest::keyClick(&v.view, Qt::Key_Minus, Qt::ControlModifier);
  EXPECT_NEAR(v.view.zoom(), fitted, 1e-9);

  const QPointF centre = v.view.viewport()->rect().center();
  QWheelEvent wheel(centre, v.view.viewport()->mapToGlobal(centre), QPoint(), QPoint(0, 240), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(v.view.viewport(), &wheel);
  EXPECT_NEAR(v.view.zoom(), fitted * 1.25 * 1.25, 1e-9);
  for (int i = 0; i < 40; ++i) v.view.zoomIn();
  EXPECT_LE(v.view.zoom(), 12.0);
  for (int i = 0; i < 80; ++i) v.view.zoomOut();
  EXPECT_GE(v.view.zoom(), 0.15);
}

TEST(DiagramView, DraggingTheBackgroundPans) {
  ShownView v(diagram_test::smallThsa());
  v.view.setZoom(4.0);
  auto* h = v.view.horizontalScrollBar();
  ASSERT_GT(h->maximum(), 0);
  h->setValue(h->maximum() / 2);
  const int before = h->value();
  // Press on empty background (a corner of the page), drag left, release.
  const QPoint start = v.view.mapFromScene(v.view.diagramScene()->contentRect().topLeft() + QPointF(4, 4));
  const QPoint from = v.view.viewport()->rect().contains(start) ? start : QPoint(5, 5);
  QTest::mousePress(v.view.viewport(), Qt::LeftButton, {}, from);
  QTest::mouseMove(v.view.viewport(), from + QPoint(-60, 0));
  QTest::mouseMove(v.view.viewport(), from + QPoint(-120, 0));
  QTest::mouseRelease(v.view.viewport(), Qt::LeftButton, {}, from + QPoint(-120, 0));
  EXPECT_NE(h->value(), before);
}

TEST(DiagramView, SimilarNetworkKeepsZoomOtherNetworkRefits) {
  auto s = spec::makeSpecPreset("thsa");
  ShownView v(spec::buildTensorNetwork(s, 8));
  v.view.setZoom(2.5);
  s.sizes.F = 48;  // same tensors, other sizes
  v.view.setNetwork(spec::buildTensorNetwork(s, 8));
  EXPECT_NEAR(v.view.zoom(), 2.5, 1e-9);
  v.view.setNetwork(spec::buildTensorNetwork(spec::makeSpecPreset("dimwise"), 8));
  EXPECT_LT(v.view.zoom(), 2.5);  // fitted to the new picture
}

TEST(DiagramView, AFittedViewRefitsWhenItGrowsUntilTheUserZooms) {
  // The explorer builds its diagram before the window reaches its size: the first fit is small.
  DiagramView view;
  view.resize(160, 120);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  view.setNetwork(diagram_test::smallThsa());
  const double small = view.zoom();
  view.resize(900, 650);
  QApplication::processEvents();
  const double grown = view.zoom();
  EXPECT_GT(grown, 2 * small) << "fitted again to the larger view";
  view.zoomIn();
  view.resize(1000, 700);
  QApplication::processEvents();
  EXPECT_NEAR(view.zoom(), grown * 1.25, 1e-9) << "the user's zoom is kept";
  view.fitToView();
  view.resize(500, 400);
  QApplication::processEvents();
  EXPECT_LT(view.zoom(), grown) << "fitted again";
}

TEST(DiagramView, ThemeAndSizesSwitchKeepZoom) {
  ShownView v(diagram_test::smallThsa());
  v.view.setZoom(1.7);
  v.view.setTheme(diagram_view::Theme::Dark);
  EXPECT_EQ(v.view.options().theme, diagram_view::Theme::Dark);
  EXPECT_LT(v.view.diagramScene()->backgroundBrush().color().lightness(), 60);
  v.view.setShowSizes(true);
  EXPECT_TRUE(v.view.options().show_sizes);
  EXPECT_TRUE(v.view.options().cosmetic_pens);
  EXPECT_FALSE(v.view.exportOptions().cosmetic_pens);
  EXPECT_NEAR(v.view.zoom(), 1.7, 1e-9);
}
