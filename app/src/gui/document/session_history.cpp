#include "gui/document/session_history.h"

#include <QFileInfo>
#include <QSettings>

#include "gui/document/app_paths.h"

namespace tensorscope::app {

bool autosaveWorthRestoring() {
  return QFileInfo::exists(autosavePath()) && !QSettings().value("cleanExit", true).toBool();
}

void setCleanExit(bool clean) { QSettings().setValue("cleanExit", clean); }

QStringList recentSessions() { return QSettings().value("recentSessions").toStringList(); }

void rememberRecentSession(const QString& path) {
  auto recent = recentSessions();
  recent.removeAll(path);
  recent.prepend(path);
  QSettings().setValue("recentSessions", recent.mid(0, 8));
}

}  // namespace tensorscope::app
