#include "gui/figures/image_file.h"

#include <QBuffer>
#include <QByteArray>
#include <QFile>
#include <stdexcept>
#include <string_view>

#include "files/atomic_file.h"

namespace tensorscope::app {

void savePngAtomically(const QImage& image, const QString& path) {
  if (image.isNull()) throw std::runtime_error("nothing to save as " + path.toStdString() + " (an empty picture)");
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) throw std::runtime_error("cannot encode the PNG of " + path.toStdString());
  files::writeFileAtomically(QFile::encodeName(path).toStdString(),
                            std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
}

}  // namespace tensorscope::app
