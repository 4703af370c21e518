#!/usr/bin/env python3
"""scripts/check_layers.py fails on planted violations, naming each, and passes on the real tree.

usage: test_check_layers.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile


def run(script, app_src):
    r = subprocess.run([sys.executable, script, app_src], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    source = sys.argv[1]
    script = os.path.join(source, "scripts", "check_layers.py")
    real = os.path.join(source, "app", "src")
    code, out = run(script, real)
    if code != 0:
        print("FAIL the real tree breaks its layers:\n" + out)
        return 1
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "src")
        shutil.copytree(real, copy)

        def plant(rel, line):
            with open(os.path.join(copy, rel), "a") as f:
                f.write("\n" + line + "\n")

        teaching = sorted(f for f in os.listdir(os.path.join(copy, "gui", "teaching")) if f.endswith(".cpp"))[0]
        plant(os.path.join("gui", "teaching", teaching), '#include "gui/shell/main_window.h"')
        plant(os.path.join("gui", "document", "session.cpp"), '#include "gui/training/run_features.h"')
        plant(os.path.join("gui", "shell", "demo_runner.cpp"), '#include "gui/shell/main_window.h"')
        plant(os.path.join("gui", "design", "core_editor.cpp"), '#include "cli/cli.h"')
        plant(os.path.join("sweeps", "process_pool.cpp"), "#include <QString>")
        with open(os.path.join(copy, "gui", "stray.cpp"), "w") as f:
            f.write("// a file outside the feature folders\n")
        code, out = run(script, copy)
        expected = [
            "gui/teaching/%s:" % teaching, "no feature includes shell/",
            "gui/document/session.cpp:", "gui/document may include document",
            "gui/design/core_editor.cpp:", "gui/ never includes cli/",
            "sweeps/process_pool.cpp:", "sweeps/ is plain C++ (no Qt, no torch)",
            "gui/stray.cpp: a file directly in gui/",
            "gui/shell/demo_runner.cpp:", "only the window's own files include it",
            "check_layers: 6 include(s) break the layers",
        ]
        if code != 1:
            failures.append("exit %d, not 1, with six violations planted" % code)
        failures += ["the report does not say '%s'" % e for e in expected if e not in out]
    if failures:
        print("FAIL\n" + "\n".join(failures) + "\n--- report ---\n" + out)
        return 1
    print("ok: the real tree passes; six planted violations are each named and fail the check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
