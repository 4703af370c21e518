#pragma once
// Helpers of the offscreen viz widget tests (test_viz_widgets.cpp, test_viz_figures.cpp,
// test_viz_line_plot.cpp).

#include <gtest/gtest.h>

#include <QApplication>
#include <QByteArray>
#include <QSize>
#include <QString>
#include <QStringList>
#include <QXmlStreamReader>

#include "viz/plot_widget.h"

namespace tensorscope::test {

/// Shows the widget and lets queued replots and layouts run, so geometry can be read.
inline void settle(viz::PlotWidget& w, QSize size = QSize(640, 420)) {
  w.resize(size);
  w.show();
  for (int i = 0; i < 3; ++i) QApplication::processEvents();
  w.replotNow();
}

/// The lines of a CSV text, empty ones skipped.
inline QStringList csvLines(const QString& text) { return text.split(QLatin1Char('\n'), Qt::SkipEmptyParts); }

/// Expects `svg` to be well-formed XML whose root is <svg>, with more than `minElements` elements.
inline void expectSvgDocument(const QByteArray& svg, int minElements = 20) {
  QXmlStreamReader xml(svg);
  QString root;
  int elements = 0;
  while (!xml.atEnd())
    if (xml.readNext() == QXmlStreamReader::StartElement) {
      if (root.isEmpty()) root = xml.name().toString();
      ++elements;
    }
  EXPECT_FALSE(xml.hasError()) << xml.errorString().toStdString();
  EXPECT_EQ(root, QStringLiteral("svg"));
  EXPECT_GT(elements, minElements);
}

}  // namespace tensorscope::test
