#pragma once
// PNG files the window writes (screenshots, the core matrix figure), through the same atomic writer
// as every other file of the product.

#include <QImage>
#include <QString>

namespace tensorscope::app {

/// Encodes `image` as PNG in memory and writes it atomically (temporary file, fsync, rename).
/// Throws std::runtime_error with the reason; a previous file at `path` is then left as it was.
void savePngAtomically(const QImage& image, const QString& path);

}  // namespace tensorscope::app
