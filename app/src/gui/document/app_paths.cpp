#include "gui/document/app_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

// Set by app/CMakeLists.txt; other builds of this file find resources only where an install puts them.
#ifndef TENSORSCOPE_BIN_TO_DATA
#define TENSORSCOPE_BIN_TO_DATA "../share"
#endif
#ifndef TENSORSCOPE_BUILD_DIR
#define TENSORSCOPE_BUILD_DIR ""
#endif

namespace tensorscope::app {

QString resourceDirectory(const QString& kind) {
  const QString bin = QCoreApplication::applicationDirPath();
  // Installed: DATADIR/tensorscope/KIND relative to the binary's BINDIR (GNUInstallDirs), wherever
  // the prefix was moved.
  const QDir installed(QDir(bin).filePath(QStringLiteral(TENSORSCOPE_BIN_TO_DATA "/tensorscope/") + kind));
  if (installed.exists()) return installed.canonicalPath();
  // A binary of this build tree (the explorer, the tests) reads the source tree's resources; an
  // installed one never does.
  const QString build = QFileInfo(QStringLiteral(TENSORSCOPE_BUILD_DIR)).canonicalFilePath();
  const QString here = QFileInfo(bin).canonicalFilePath();
  if (!build.isEmpty() && (here == build || here.startsWith(build + '/')))
    return QStringLiteral(TENSORSCOPE_SOURCE_DIR "/resources/") + kind;
  return {};
}

QStringList exampleSessionPaths() {
  QStringList out;
  const QDir d(resourceDirectory(QStringLiteral("sessions")));
  if (d.path().isEmpty() || !d.exists()) return out;
  for (const auto& f : d.entryList({"*.json"}, QDir::Files, QDir::Name)) out << d.absoluteFilePath(f);
  return out;
}

QString withSessionSuffix(const QString& path) {
  if (path.isEmpty() || path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) return path;
  return path + QString::fromLatin1(kSessionSuffix);
}

bool isExampleSession(const QString& path) {
  const QString canonical = QFileInfo(path).canonicalFilePath();
  if (canonical.isEmpty()) return false;
  for (const QString& e : exampleSessionPaths())
    if (QFileInfo(e).canonicalFilePath() == canonical) return true;
  return false;
}

QString autosavePath() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/autosave.session.json";
}

QString userLessonDirectory() { return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/lessons"; }

}  // namespace tensorscope::app
