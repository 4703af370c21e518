#pragma once
/// The explorer's menu bar (File, Edit, Training, View, Help), built from the window's public
/// parts: each action calls the document, the training driver or a window command.

#include <QString>

namespace tensorscope::app {

class MainWindow;

void buildMainMenus(MainWindow& window);

/// Help > Keyboard shortcuts: a table made from the menus' actions as they are bound (so it cannot
/// list a key that does nothing), then the mouse and presenter-mode keys, which are no actions.
QString shortcutSheet(const MainWindow& window);

}  // namespace tensorscope::app
