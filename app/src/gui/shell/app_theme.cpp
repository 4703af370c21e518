#include "gui/shell/app_theme.h"

#include <QApplication>
#include <QPainter>
#include <QPixmap>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

#include <utility>

namespace tensorscope::app {

void applyApplicationTheme(bool dark) {
  if (QApplication::style()->name().compare("fusion", Qt::CaseInsensitive) != 0)
    QApplication::setStyle(QStyleFactory::create("Fusion"));
  QPalette p = QApplication::style()->standardPalette();
  if (dark) {
    const std::pair<QPalette::ColorRole, QColor> roles[] = {
        {QPalette::Window, QColor(45, 45, 48)},        {QPalette::WindowText, QColor(230, 230, 230)},
        {QPalette::Base, QColor(30, 30, 32)},          {QPalette::AlternateBase, QColor(45, 45, 48)},
        {QPalette::Text, QColor(230, 230, 230)},       {QPalette::Button, QColor(55, 55, 58)},
        {QPalette::ButtonText, QColor(230, 230, 230)}, {QPalette::Highlight, QColor(66, 133, 244)}};
    for (const auto& [role, colour] : roles) p.setColor(role, colour);
    // Disabled controls must look disabled: dimmed text on a flatter field.
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
      p.setColor(QPalette::Disabled, role, QColor(125, 125, 128));
    p.setColor(QPalette::Disabled, QPalette::Base, QColor(45, 45, 48));
    p.setColor(QPalette::Disabled, QPalette::Button, QColor(48, 48, 50));
  }
  QApplication::setPalette(p);
}

QIcon paletteIcon(QStyle::StandardPixmap which, const QPalette& palette) {
  const QIcon source = QApplication::style()->standardIcon(which);
  QIcon icon;
  const auto tinted = [&](const QPixmap& shape, const QColor& colour) {
    QPixmap out = shape;
    QPainter p(&out);
    p.setCompositionMode(QPainter::CompositionMode_SourceIn);  // the shape's alpha, the palette's colour
    p.fillRect(out.rect(), colour);
    return out;
  };
  QList<QSize> sizes = source.availableSizes();
  if (sizes.isEmpty()) sizes = {QSize(16, 16), QSize(32, 32)};
  for (const QSize& size : sizes) {
    const QPixmap shape = source.pixmap(size);
    icon.addPixmap(tinted(shape, palette.color(QPalette::Active, QPalette::ButtonText)), QIcon::Normal);
    icon.addPixmap(tinted(shape, palette.color(QPalette::Disabled, QPalette::ButtonText)), QIcon::Disabled);
  }
  return icon;
}

}  // namespace tensorscope::app
