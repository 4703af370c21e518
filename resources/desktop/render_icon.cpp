// Build-time tool: renders the SVG icon to the PNG sizes of the hicolor theme (16 ... 512), so the
// PNGs never drift from the SVG. usage: render_icon ICON.svg OUT_DIR
#include <QDir>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSvgRenderer>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: render_icon ICON.svg OUT_DIR\n");
    return 2;
  }
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication app(argc, argv);
  QSvgRenderer svg(QString::fromLocal8Bit(argv[1]));
  if (!svg.isValid()) {
    std::fprintf(stderr, "render_icon: %s is not a valid SVG\n", argv[1]);
    return 1;
  }
  for (const int size : {16, 24, 32, 48, 64, 128, 256, 512}) {
    QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    svg.render(&painter);
    painter.end();
    const QString dir = QDir(QString::fromLocal8Bit(argv[2])).filePath(QString("%1x%1").arg(size));
    QDir().mkpath(dir);
    if (!image.save(QDir(dir).filePath("tensorscope.png"))) {
      std::fprintf(stderr, "render_icon: cannot write %s/tensorscope.png\n", qPrintable(dir));
      return 1;
    }
  }
  return 0;
}
