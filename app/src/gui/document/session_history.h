#pragma once
/// What the explorer remembers between starts (QSettings): whether it closed cleanly (so that an
/// autosave is worth offering) and the recently opened session files.

#include <QString>
#include <QStringList>

namespace tensorscope::app {

/// True when the last explorer did not close cleanly and left an autosave to offer.
bool autosaveWorthRestoring();
/// Marks the explorer as running (false) or closed cleanly (true).
void setCleanExit(bool clean);
/// The recently opened session files, newest first (at most 8), and recording one.
QStringList recentSessions();
void rememberRecentSession(const QString& path);

}  // namespace tensorscope::app
