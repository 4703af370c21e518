#!/usr/bin/env python3
"""tensorscope.1 from the real `tensorscope --help` text (run at build time, so the man page never
drifts from the program). usage: make_manpage.py TENSORSCOPE_BINARY VERSION OUT"""
import subprocess
import sys


def roff(text):
    """Escapes text for a roff line (backslashes, leading dots and quotes, hyphens of options)."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def main():
    binary, version, out = sys.argv[1:4]
    help_text = subprocess.run([binary, "--help"], check=True, capture_output=True, text=True).stdout
    lines = help_text.splitlines()
    title = lines[0]
    # usage: entries start with "  tensorscope"; continuation lines are indented further; the
    # description column starts at the first run of two spaces after the command text.
    entries, options, tail = [], [], []
    section = None
    column = None
    for line in lines[1:]:
        if line.startswith("usage:"):
            section = "usage"
            continue
        if line.startswith("options:"):
            section = "options"
            continue
        if not line.strip():
            if section == "options":
                section = "tail"
            continue
        if section == "usage":
            if column is None:  # where the first entry's description starts
                column = len(line) - len(line.rstrip()) + len(line.rstrip()) - len(line.rstrip().split("   ")[-1].lstrip())
            # A command longer than the column has no description on its line.
            split = len(line) > column and line[column - 2:column] == "  "
            left, right = (line[:column], line[column:]) if split else (line, "")
            if line.startswith("  tensorscope"):
                entries.append([left.strip(), right.strip()])
            elif entries:
                if left.strip():
                    entries[-1][0] += " " + left.strip()
                if right.strip():
                    entries[-1][1] += (" " if entries[-1][1] else "") + right.strip()
        elif section == "options":
            left, _, right = line.strip().partition("  ")
            if line.startswith("  -"):
                options.append([left.strip(), right.strip()])
            elif options:
                options[-1][1] += " " + line.strip()
        elif section == "tail":
            tail.append(line.strip())
    man = [
        '.TH TENSORSCOPE 1 "" "Tensorscope %s" "User Commands"' % version,
        ".SH NAME",
        "tensorscope \\- " + roff(title.split(" - ", 1)[-1]),
        ".SH SYNOPSIS",
    ]
    for command, _ in entries:
        man += [".B " + roff(command.split(" ", 1)[0]), roff(command.split(" ", 1)[1]) if " " in command else "", ".br"]
    man += [
        ".SH DESCRIPTION",
        "Tensorscope shows attention mechanisms (Tuformer's tunable-head attention with its core matrix C,"
        " fixed head size, TP-attention with role vectors, multi-linear block-term attention and"
        " dimension-wise attention) as executable tensor diagrams, trains small models with live views,"
        " and exports models and figures. Without a command it opens the explorer window; with a session"
        " file or a run directory it opens that. The commands run headless.",
        ".SH COMMANDS",
    ]
    for command, description in entries:
        man += [".TP", ".B " + roff(command), roff(description)]
    man.append(".SH OPTIONS")
    for option, description in options:
        man += [".TP", ".B " + roff(option), roff(description)]
    man += [".SH EXIT STATUS"]
    man += [roff(t) for t in tail if t.startswith("exit codes")]
    man += [
        ".SH ENVIRONMENT",
        ".TP", ".B TENSORSCOPE_THREADS", "LibTorch intra\\-op threads when \\-\\-threads is not given.",
        ".TP", ".B OMP_WAIT_POLICY",
        "The window sets PASSIVE (OpenMP threads sleep at barriers) unless this is set.",
        ".TP", ".B XDG_DATA_HOME",
        "Runs of untitled sessions go to $XDG_DATA_HOME/Tensorscope/Tensorscope/runs.",
        ".SH FILES",
        ".TP", ".I share/tensorscope/sessions, share/tensorscope/examples",
        "Example sessions (they open as untitled copies) and example run configurations.",
        ".TP", ".I share/doc/tensorscope", "The README and the design documents.",
        ".SH SEE ALSO",
        roff(" ".join(t for t in tail if t.startswith("docs:"))),
    ]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(line for line in man if line is not None) + "\n")


if __name__ == "__main__":
    main()
