// The interactive diagram widget, offscreen: clicking the core, zooming, panning, rebuilding.
#include <gtest/gtest.h>

#include <QApplication>
#include <QFile>
#include <QFileInfo>
#include <QGraphicsEllipseItem>
#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QLabel>
#include <QMenu>
#include <QTemporaryDir>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTest>
#include <QWheelEvent>
#include <memory>

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

// N29: a design change that keeps the tensors but changes the drawing's bounds (core:mhsa writes
// "√R = 1/√D, causal" beside the box) refits a fitted view: nothing is clipped.
TEST(DiagramView, AFittedViewRefitsWhenADesignChangeChangesTheBounds) {
  const std::vector<std::string> designs = spec::specPresetNames();
  int similarPairs = 0;
  ShownView v(spec::buildTensorNetwork(spec::makeSpecPreset("mhsa"), 8));
  v.view.resize(560, 430);  // the Diagram dock at 1600 × 1000: the fit is bound by the width
  QApplication::processEvents();
  // Every design is shown after two others and before two others (its neighbour in the list and
  // one further away): 62 pairs, each two Graphviz layouts (all 961 pairs took 40 s for no more).
  const size_t n = designs.size();
  for (size_t i = 0; i < n; ++i)
    for (size_t step : {size_t{1}, size_t{7}}) {
      const std::string& from = designs[(i + n - step % n) % n];
      const std::string& to = designs[i];
      SCOPED_TRACE(from + " -> " + to);
      auto a = spec::makeSpecPreset(from), b = spec::makeSpecPreset(to);
      a.causal = false;
      b.causal = true;
      v.view.setNetwork(spec::buildTensorNetwork(a, 8));
      QApplication::processEvents();
      v.view.fitToView();
      const auto before = v.view.diagramScene()->contentRect();
      v.view.setNetwork(spec::buildTensorNetwork(b, 8));
      QApplication::processEvents();  // the header's new height reaches the viewport
      const QRectF content = v.view.diagramScene()->contentRect();
      if (content != before) ++similarPairs;
      const QRect shown = v.view.mapFromScene(content).boundingRect();
      const QRect area = v.view.viewport()->rect().adjusted(-2, -2, 2, 2);
      ASSERT_TRUE(shown.left() >= area.left() && shown.right() <= area.right())  // the clipped side << "drawn at " << shown.x() << "," << shown.y() << " " << shown.width() << "×"
                                        << shown.height() << " in a " << area.width() << "×" << area.height() << " view";
    }
  EXPECT_GT(similarPairs, 0);
  // The user's zoom is still kept.
  auto s = spec::makeSpecPreset("thsa");
  v.view.setNetwork(spec::buildTensorNetwork(s, 8));
  v.view.setZoom(2.5);
  s.causal = !s.causal;
  v.view.setNetwork(spec::buildTensorNetwork(s, 8));
  EXPECT_NEAR(v.view.zoom(), 2.5, 1e-9);
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

// Issue 13: the title and equation were clipped at readable zoom. They now sit in a header above
// the zoomable drawing, wrapped to the view's width; exports still draw them in the picture.
TEST(DiagramView, TitleAndEquationSitInAWrappedHeaderOutsideTheZoomableDrawing) {
  const auto net = spec::buildTensorNetwork(spec::makeSpecPreset("thsa"), 8);
  ASSERT_FALSE(net.title.empty());
  ASSERT_FALSE(net.equation.empty());
  ShownView v(net);
  EXPECT_EQ(v.view.diagramScene()->count(diagram_view::DiagramScene::Element::Title), 0);
  const QString header = v.view.headerText();
  EXPECT_FALSE(header.isEmpty());
  const auto* label = v.view.findChild<QLabel*>("DiagramHeader");
  ASSERT_TRUE(label);
  EXPECT_GE(v.view.viewport()->geometry().top(), label->geometry().bottom()) << "the drawing starts below the header";
  // Narrow: the header wraps (taller), never wider than the view.
  const int wideHeight = label->height();
  v.view.resize(260, 650);
  QApplication::processEvents();
  EXPECT_GT(label->height(), wideHeight);
  EXPECT_LE(label->width(), v.view.width());
  v.view.setZoom(6);  // zooming leaves the header alone
  EXPECT_EQ(v.view.headerText(), header);
  EXPECT_TRUE(v.view.exportOptions().show_title) << "a figure carries its title";
}

TEST(DiagramView, ANoticeShowsUnderTheHeaderAndDimsTheDrawing) {
  ShownView v(diagram_test::smallThsa());
  EXPECT_EQ(v.view.diagramScene()->foregroundBrush().style(), Qt::NoBrush);
  v.view.setNotice("This design is invalid: R must be at least 1.");
  const auto* notice = v.view.findChild<QLabel*>("DiagramNotice");
  ASSERT_TRUE(notice);
  EXPECT_TRUE(notice->isVisible());
  EXPECT_TRUE(notice->text().contains("invalid"));
  EXPECT_NE(v.view.diagramScene()->foregroundBrush().style(), Qt::NoBrush);
  EXPECT_GE(v.view.viewport()->geometry().top(), notice->geometry().bottom());
  v.view.setNotice({});
  EXPECT_FALSE(notice->isVisible());
  EXPECT_EQ(v.view.diagramScene()->foregroundBrush().style(), Qt::NoBrush);
}

TEST(DiagramView, TheContextMenuFitsAndExportsEveryFormat) {
  ShownView v(diagram_test::smallThsa());
  std::unique_ptr<QMenu> menu(v.view.createContextMenu());
  QStringList exports;
  for (auto* a : menu->actions())
    if (a->data().isValid()) exports << a->data().toString();
  EXPECT_EQ(exports, (QStringList{".svg", ".pdf", ".png", ".tex", ".dot"}));
  EXPECT_EQ(menu->actions().first()->text(), "Fit to view");
  QTemporaryDir dir;
  for (auto f : {diagram_view::ExportFormat::Svg, diagram_view::ExportFormat::Pdf, diagram_view::ExportFormat::Tikz}) {
    const QString path = dir.filePath("d" + diagram_view::exportExtension(f));
    QString why;
    EXPECT_TRUE(v.view.exportTo(f, path, &why)) << why.toStdString();
    EXPECT_GT(QFileInfo(path).size(), 200) << path.toStdString();
  }
  QFile svg(dir.filePath("d.svg"));
  ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
  EXPECT_TRUE(svg.readAll().contains("THSA")) << "the exported figure carries the title";
  QString why;
  EXPECT_FALSE(v.view.exportTo(diagram_view::ExportFormat::Svg, dir.filePath("no/such/dir/d.svg"), &why));
  EXPECT_FALSE(why.isEmpty());
}

TEST(DiagramView, AViewShownBeforeItsDockIsLaidOutFitsOnceShown) {
  DiagramView view;
  view.setNetwork(diagram_test::smallThsa());  // fitted while hidden: nothing to fit to yet
  view.resize(900, 650);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  QApplication::processEvents();
  const double shown = view.zoom();
  view.fitToView();
  EXPECT_NEAR(view.zoom(), shown, 1e-9) << "the first picture is already the fitted one";
  EXPECT_GT(shown, 0.5);
}

// Teaching (issue 15): a click names the element under it (a tensor, a leg or its label, a softmax
// box), and highlights dim everything else, with a ring on the emphasised tensors.
TEST(DiagramView, ClicksNameTheTensorLegOrBoxUnderThem) {
  ShownView v(diagram_test::smallThsa());
  QSignalSpy clicked(&v.view, &DiagramView::elementClicked);
  QTest::mouseClick(v.view.viewport(), Qt::LeftButton, {}, v.at("Wk"));
  ASSERT_EQ(clicked.count(), 1);
  EXPECT_EQ(clicked.at(0).at(0).value<diagram_view::DiagramScene::Element>(), diagram_view::DiagramScene::Element::Tensor);
  EXPECT_EQ(clicked.at(0).at(1).toString(), "Wk");
  // A leg: the midpoint of one of the leg paths, found through the scene's items.
  auto* scene = v.view.diagramScene();
  bool legSeen = false, boxSeen = false;
  for (QGraphicsItem* item : scene->items()) {
    const auto [kind, id] = diagram_view::DiagramScene::elementOf(item);
    if (kind == diagram_view::DiagramScene::Element::Leg && !legSeen && item->type() == QGraphicsPathItem::Type) {
      const auto* path = static_cast<QGraphicsPathItem*>(item);
      const QPoint p = v.view.mapFromScene(path->path().pointAtPercent(0.5));
      const auto hit = v.view.elementAt(p);
      if (hit.first == diagram_view::DiagramScene::Element::Leg) {
        EXPECT_EQ(hit.second.size(), 1) << "an index letter";
        legSeen = true;
      }
    }
    if (kind == diagram_view::DiagramScene::Element::SoftmaxBox && item->type() == QGraphicsEllipseItem::Type) {
      const auto hit = v.view.elementAt(v.view.mapFromScene(item->sceneBoundingRect().center()));
      EXPECT_EQ(hit.first, diagram_view::DiagramScene::Element::SoftmaxBox);
      EXPECT_EQ(hit.second, id);
      boxSeen = true;
    }
  }
  EXPECT_TRUE(legSeen);
  EXPECT_TRUE(boxSeen) << "the softmax ball";
}

TEST(DiagramView, AHighlightDimsEverythingElseAndRingsTheEmphasised) {
  ShownView v(diagram_test::smallThsa());
  auto* scene = v.view.diagramScene();
  using E = diagram_view::DiagramScene::Element;
  EXPECT_FALSE(scene->isDimmed(E::Tensor, "Wq"));
  const int before = static_cast<int>(scene->items().size());
  v.view.setHighlight({{"x_q", "Wq"}, {}, {}, {"Wq"}});
  EXPECT_FALSE(scene->isDimmed(E::Tensor, "Wq"));
  EXPECT_FALSE(scene->isDimmed(E::Tensor, "x_q"));
  EXPECT_TRUE(scene->isDimmed(E::Tensor, "Wk"));
  EXPECT_TRUE(scene->isDimmed(E::Tensor, "C"));
  EXPECT_EQ(static_cast<int>(scene->items().size()), before + 1) << "one ring";
  // Survives a rebuild (a theme change), and clears.
  v.view.setTheme(diagram_view::Theme::Dark);
  EXPECT_TRUE(v.view.diagramScene()->isDimmed(E::Tensor, "Wk"));
  v.view.setHighlight({});
  EXPECT_FALSE(scene->isDimmed(E::Tensor, "Wk"));
  EXPECT_EQ(static_cast<int>(scene->items().size()), before);
}

// User test N17: the diagram's nodes could only be reached with the mouse.
TEST(DiagramView, TabAndArrowsSelectTensorsAndReturnClicksTheSelectedOne) {
  ShownView v(diagram_test::smallThsa());
  v.view.setFocus();
  QSignalSpy selected(&v.view, &DiagramView::tensorSelected);
  QSignalSpy clicked(&v.view, &DiagramView::elementClicked);
  QTest::keyClick(&v.view, Qt::Key_Right);
  const QString first = v.view.selectedTensor();
  ASSERT_FALSE(first.isEmpty());
  QTest::keyClick(&v.view, Qt::Key_Right);
  const QString second = v.view.selectedTensor();
  ASSERT_FALSE(second.isEmpty());
  EXPECT_NE(second, first);
  EXPECT_GE(selected.count(), 1) << "a keyboard selection is a selection, as a click's";
  QTest::keyClick(&v.view, Qt::Key_Left);
  EXPECT_EQ(v.view.selectedTensor(), first);
  QTest::keyClick(&v.view, Qt::Key_Return);
  ASSERT_EQ(clicked.count(), 1);
  EXPECT_EQ(clicked.at(0).at(0).value<diagram_view::DiagramScene::Element>(), diagram_view::DiagramScene::Element::Tensor);
  EXPECT_EQ(clicked.at(0).at(1).toString(), first);
  // Tab walks every tensor once, then the view gives the selection up (focus moves on).
  const int tensors = v.view.diagramScene()->count(diagram_view::DiagramScene::Element::Tensor);
  ASSERT_GE(tensors, 3);
  QStringList seen;
  for (QString id = v.view.selectNextTensor(true); !id.isEmpty(); id = v.view.selectNextTensor(true)) seen << id;
  EXPECT_EQ(seen.size() + 1, tensors) << "from the first, every other tensor once";
  EXPECT_TRUE(v.view.selectedTensor().isEmpty());
}
