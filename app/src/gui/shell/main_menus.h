#pragma once
/// The explorer's menu bar (File, Edit, Training, View, Help), built from the window's public
/// parts: each action calls the document, the training driver or a window command.

namespace tensorscope::app {

class MainWindow;

void buildMainMenus(MainWindow& window);

}  // namespace tensorscope::app
