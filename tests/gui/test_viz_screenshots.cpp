// Renders each viz widget offscreen with sample data to PNG files (for looking at them) and
// checks that the pictures are real: right size, not a single colour.
// Files go to $TS_VIZ_SCREENSHOT_DIR, or <temp>/tensorscope_viz.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QSet>
#include <cmath>
#include <random>

#include "viz/attention_map_grid.h"
#include "viz/curves_plot.h"
#include "viz/matrix_heatmap.h"
#include "viz/role_cluster_plot.h"
#include "viz/spectrum_plot.h"
#include "viz/stable_rank_plot.h"

using namespace tensorscope::viz;

namespace {

QString screenshotDir() {
  QString dir = qEnvironmentVariable("TS_VIZ_SCREENSHOT_DIR");
  if (dir.isEmpty()) dir = QDir::temp().filePath(QStringLiteral("tensorscope_viz"));
  QDir().mkpath(dir);
  return dir;
}

// Shows the widget at `size`, lets queued replots run, grabs it and checks the picture.
void render(QWidget& widget, const QSize& size, const QString& name) {
  widget.resize(size);
  widget.show();
  for (int i = 0; i < 4; ++i) QApplication::processEvents();
  const QImage image = widget.grab().toImage();
  ASSERT_EQ(image.size(), size * image.devicePixelRatio());
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); y += 7)
    for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
  EXPECT_GT(colours.size(), 20) << name.toStdString() << " looks blank";
  const QString path = QDir(screenshotDir()).filePath(name + QStringLiteral(".png"));
  ASSERT_TRUE(image.save(path));
  std::printf("[ screenshot ] %s\n", qPrintable(path));
}

// Loss-like curves: a decaying loss with noise, eval every 100 steps, warm-up + cosine lr.
void fillTrainingRun(CurvesPlot& plot, const QString& run, double scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.08);
  std::vector<double> steps, loss, lr;
  for (int s = 0; s <= 3000; s += 5) {
    steps.push_back(s);
    loss.push_back(scale * (2.4 * std::exp(-s / 700.0) + 0.15) * std::exp(noise(rng)));
    const double warm = std::min(1.0, s / 200.0);
    lr.push_back(1e-3 * warm * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * s / 3000.0))));
  }
  plot.appendPoints(QStringLiteral("train loss"), steps, loss, run);
  plot.appendPoints(QStringLiteral("lr"), steps, lr, run);
  for (int s = 0; s <= 3000; s += 100) {
    plot.appendPoint(QStringLiteral("eval loss (interpolation)"), s, scale * (2.5 * std::exp(-s / 800.0) + 0.2), run);
    plot.appendPoint(QStringLiteral("exact match"), s, 1.0 - std::exp(-s / 900.0), run);
  }
}

// Causal attention rows (softmax of a smooth random score), one map per channel.
std::vector<std::vector<MatrixData>> sampleMaps(int layers, int channels, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<std::vector<MatrixData>> maps(layers);
  for (int l = 0; l < layers; ++l)
    for (int c = 0; c < channels; ++c) {
      MatrixData m{n, n, std::vector<float>(static_cast<std::size_t>(n) * n, 0.0f)};
      const int offset = (c / 8 + l) % 4;  // heads attend to different relative positions
      for (int q = 0; q < n; ++q) {
        double total = 0;
        std::vector<double> w(q + 1);
        for (int k = 0; k <= q; ++k) {
          w[k] = std::exp(2.5 * (q - k == offset ? 1.0 : 0.0) + 0.6 * noise(rng));
          total += w[k];
        }
        for (int k = 0; k <= q; ++k) m.values[q * n + k] = static_cast<float>(w[k] / total);
      }
      maps[l].push_back(std::move(m));
    }
  return maps;
}

QStringList sampleTokens() {
  return QStringList{"<bos>", "12", "+", "35", "=", "47", ";", "8", "*", "3", "=", "24"};
}

}  // namespace

TEST(VizScreenshots, CurvesSingleRunSmoothed) {
  CurvesPlot plot;
  fillTrainingRun(plot, QString(), 1.0, 1);
  plot.setSmoothing(0.8);
  render(plot, QSize(760, 440), QStringLiteral("viz_curves"));
}

TEST(VizScreenshots, CurvesTwoRunsLogDark) {
  CurvesPlot plot;
  fillTrainingRun(plot, QStringLiteral("thsa-r32"), 1.0, 2);
  fillTrainingRun(plot, QStringLiteral("mha-h4"), 1.3, 3);
  plot.setLogY(true);
  plot.setDarkTheme(true);
  render(plot, QSize(760, 440), QStringLiteral("viz_curves_runs_dark"));
}

TEST(VizScreenshots, MatrixHeatmapWithMask) {
  MatrixHeatmap heatmap;
  const int n = 16;
  std::vector<double> c(n * n);
  std::vector<unsigned char> mask(n * n, 0);
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < n; ++s) {
      c[r * n + s] = (r / 4 == s / 4 ? 1.0 : 0.0) * std::cos(0.3 * (r - s)) + 0.15 * std::sin(r * 0.7 + s);
      mask[r * n + s] = (r / 4 == s / 4) ? 0 : ((r + s) % 5 == 0);
    }
  heatmap.setMatrix(c, n, n, QStringLiteral("core C, layer 0"));
  heatmap.setMask(mask);
  render(heatmap, QSize(560, 480), QStringLiteral("viz_matrix_heatmap"));
}

TEST(VizScreenshots, StableRankAndSpectrum) {
  StableRankPlot ranks;
  for (int s = 0; s <= 3000; s += 50)
    ranks.appendSnapshot(s, {0, 1}, {4.0 + 9.0 * std::exp(-s / 600.0), 4.6 + 6.0 * std::exp(-s / 900.0)});
  ranks.setHeadsReference(4);
  render(ranks, QSize(640, 380), QStringLiteral("viz_stable_rank"));

  SpectrumPlot spectrum;
  std::vector<CoreSpectrum> spectra;
  for (int layer = 0; layer < 2; ++layer) {
    CoreSpectrum s;
    s.layer = layer;
    for (int i = 0; i < 32; ++i) s.singular_values.push_back((i < 4 ? 3.0 - 0.3 * i : 0.6 * std::exp(-0.15 * i)) / (1 + layer));
    double f = 0;
    for (double v : s.singular_values) f += v * v;
    s.stable_rank = f / (s.singular_values[0] * s.singular_values[0]);
    spectra.push_back(s);
  }
  spectrum.setSpectra(spectra, 1200);
  spectrum.setHeads(4);
  render(spectrum, QSize(640, 380), QStringLiteral("viz_spectrum"));
  spectrum.setDarkTheme(true);
  ranks.setDarkTheme(true);
  render(spectrum, QSize(640, 380), QStringLiteral("viz_spectrum_dark"));
  render(ranks, QSize(640, 380), QStringLiteral("viz_stable_rank_dark"));
}

TEST(VizScreenshots, AttentionMapGrid) {
  AttentionMapGrid grid;
  grid.setMaps(sampleMaps(2, 32, 12, 5), sampleTokens(), {0, 1}, 1200);
  grid.setGroupSize(8);
  render(grid, QSize(820, 560), QStringLiteral("viz_attention_heads"));
  grid.setDarkTheme(true);
  render(grid, QSize(820, 560), QStringLiteral("viz_attention_heads_dark"));
  grid.setDarkTheme(false);
  grid.setAggregation(AttentionMapGrid::Aggregation::PerChannel);
  render(grid, QSize(820, 560), QStringLiteral("viz_attention_channels"));
  grid.showEnlarged(1, 3);
  ASSERT_NE(grid.enlargedView(), nullptr);
  render(*grid.enlargedView()->window(), QSize(600, 540), QStringLiteral("viz_attention_enlarged"));
}

TEST(VizScreenshots, RoleClusters) {
  RoleClusterPlot roles;
  std::mt19937 rng(9);
  std::normal_distribution<double> noise(0.0, 0.45);
  const QStringList labels{"subject", "verb", "object", "number"};
  const QStringList words{"cat", "sat", "mat", "7"};
  std::vector<double> xs, ys;
  std::vector<int> clusters;
  QStringList tokens, contexts, pointLabels;
  for (int i = 0; i < 240; ++i) {
    const int g = i % 4;
    xs.push_back(std::cos(g * 1.6) * 2.5 + noise(rng));
    ys.push_back(std::sin(g * 1.6) * 2.0 + noise(rng));
    tokens << words[g];
    pointLabels << labels[g];
    contexts << QStringLiteral("q%1: the cat sat on the mat 7 times").arg(i);
    clusters.push_back(g == 3 ? 2 : g);
  }
  roles.setPoints(xs, ys, tokens, contexts, pointLabels);
  roles.setClusters(clusters);
  roles.setK(3);
  render(roles, QSize(640, 440), QStringLiteral("viz_roles_clusters"));
  roles.setColourBy(RoleClusterPlot::ColourBy::Label);
  roles.setDarkTheme(true);
  render(roles, QSize(640, 440), QStringLiteral("viz_roles_labels_dark"));
}
