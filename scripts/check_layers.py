#!/usr/bin/env python3
"""The include layers of the explorer and the app (docs/architecture.md, "Layers of app/src").

usage: check_layers.py [APP_SRC]     (default: app/src of this checkout)

Reads every #include "..." under APP_SRC and fails (exit 1, one line per violation: file:line, the
include and the rule it breaks) when
  * a file lies directly in gui/ (every file belongs to a feature folder);
  * a gui feature folder includes a gui folder its layer may not: each folder may include itself,
    document/ and the libraries; design, training: + document; figures: + design, training;
    experiments: + training; teaching: + design, training; shell/ may include every feature;
    no feature includes shell/;
  * anything under gui/ includes cli/ (shared text lives in common/);
  * a file other than the window's own (shell/main_window*.cpp, shell/main_menus.cpp) and main.cpp
    includes gui/shell/main_window.h: runners and docks are given the parts they drive
    (LessonParts, DemoParts), never the window;
  * sweeps/ (the process pool and Slurm client: plain C++) includes Qt, torch, gui/ or cli/;
  * common/ includes gui/ or cli/.
Torch-free includes are the CMake firewall's (cmake/TensorscopeTargets.cmake); this checks the folders.
"""
import os
import re
import sys

FEATURES = ["document", "design", "training", "figures", "experiments", "teaching", "shell"]
# What each gui folder may include of gui/ (besides itself).
ALLOWED = {
    "document": set(),
    "design": {"document"},
    "training": {"document"},
    "figures": {"document", "design", "training"},
    "experiments": {"document", "training"},
    "teaching": {"document", "design", "training"},
    "shell": set(FEATURES) - {"shell"},
}
# The files that may include the window's header: the window itself, its menus, and main().
WINDOW_HEADER = "gui/shell/main_window.h"
WINDOW_FILES = {"gui/shell/main_window.cpp", "gui/shell/main_window_docks.cpp", "gui/shell/main_menus.cpp", "main.cpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1), m.group(2)


def check(app_src):
    problems = []
    gui = os.path.join(app_src, "gui")
    for name in sorted(os.listdir(gui)) if os.path.isdir(gui) else []:
        if os.path.isfile(os.path.join(gui, name)):
            problems.append("gui/%s: a file directly in gui/; it belongs to a feature folder (%s)" % (name, ", ".join(FEATURES)))
    for root, _, files in os.walk(app_src):
        for name in sorted(files):
            if not name.endswith((".h", ".cpp")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, app_src)
            parts = rel.split(os.sep)
            top = parts[0]
            folder = parts[1] if top == "gui" and len(parts) > 2 else None
            for number, kind, target in includes(path):
                where = "%s:%d: #include %s" % (rel, number, target)
                head = target.split("/")[0]
                # (A feature including it already breaks "no feature includes shell/".)
                if target == WINDOW_HEADER and folder in ("shell", None) and rel.replace(os.sep, "/") not in WINDOW_FILES:
                    problems.append(where + ": only the window's own files include it; give the parts instead (LessonParts, DemoParts)")
                if top == "gui":
                    if head == "cli":
                        problems.append(where + ": gui/ never includes cli/ (shared text lives in common/)")
                    elif head == "gui" and folder in ALLOWED:
                        other = target.split("/")[1] if target.count("/") >= 2 else ""
                        if other != folder and other not in ALLOWED[folder]:
                            rule = ("no feature includes shell/" if other == "shell"
                                    else "gui/%s may include %s" % (folder, ", ".join(sorted(ALLOWED[folder] | {folder}))))
                            problems.append(where + ": " + rule)
                elif top == "sweeps":
                    if kind == "<" and (target.startswith("Q") or target.startswith("torch") or target.startswith("ATen")):
                        problems.append(where + ": sweeps/ is plain C++ (no Qt, no torch)")
                    elif head in ("gui", "cli"):
                        problems.append(where + ": sweeps/ includes neither gui/ nor cli/")
                elif top == "common" and head in ("gui", "cli"):
                    problems.append(where + ": common/ includes neither gui/ nor cli/")
    return problems


def main():
    app_src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "app", "src")
    problems = check(app_src)
    for p in problems:
        print(p)
    if problems:
        print("check_layers: %d include(s) break the layers of app/src (docs/architecture.md)" % len(problems))
        return 1
    print("check_layers: app/src keeps its layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
