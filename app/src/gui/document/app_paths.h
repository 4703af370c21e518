#pragma once
/// Where the explorer's files are: shipped resources and example sessions, the session file name,
/// the autosave file.

#include <QString>
#include <QStringList>

namespace tensorscope::app {

/// Example sessions shipped in resources/sessions (names and paths).
QStringList exampleSessionPaths();
/// Session files are JSON named NAME.tensorscope.json: the longer glob gives them their own MIME
/// type (application/x-tensorscope-session) while they stay .json files; any .json opens.
inline constexpr const char* kSessionSuffix = ".tensorscope.json";
inline constexpr const char* kSessionFileFilter = "Tensorscope session (*.tensorscope.json *.json);;All files (*)";
/// `path` as a session file name: a name without ".json" gets ".tensorscope.json".
QString withSessionSuffix(const QString& path);
/// True when `path` is one of exampleSessionPaths() (they open as untitled copies).
bool isExampleSession(const QString& path);
/// Where the resources of `kind` ("sessions", "examples") are: the installed
/// DATADIR/tensorscope/KIND next to the binary's prefix, else (a binary of the build tree) the source
/// tree's resources/KIND; empty when neither.
QString resourceDirectory(const QString& kind);
/// Where the explorer autosaves the open session (every minute and on close).
QString autosavePath();
/// The user's own lessons (Lessons > Add lessons… copies a lesson file here; read at every start
/// beside the installed ones): APPDATA/lessons, e.g. ~/.local/share/Tensorscope/Tensorscope/lessons.
QString userLessonDirectory();

}  // namespace tensorscope::app
