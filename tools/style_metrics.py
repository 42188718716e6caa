"""Measure a chapter against the house style: the numbers of the lecture-ready issues.

    python tools/style_metrics.py chapters/02_gd_theory.md [more chapters]
    python tools/style_metrics.py --rev HEAD~3 chapters/02_gd_theory.md  # older

For each MyST chapter it reports

* ``words``: prose on the main reading path, that is outside code cells, display math,
  exercises, solutions and dropdowns (tables and inline math count, as a reader reads
  them); ``deeper`` is the part of it under "Going deeper" headings;
* ``cells``: the median and largest line count of the *visible* code cells (not tagged
  ``remove-input``, ``remove-cell``, ``hide-input`` or ``hide-cell``);
* ``numbers/1000``: glued numbers in main-path prose outside tables, per 1000 words.
  A glued number carries a format spec (``{glue:text}`loss:.2f```, ``n:d``); a glued
  word that depends on a number (``{glue:text}`verdict```) has none and is not
  counted: the house style asks for both;
* ``no figure``: the longest run of main-path words between two figures (a code
  cell that shows a plot, or an image);
* ``long``: the share of main-path sentences over 40 words.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
from pathlib import Path

HIDDEN = ("remove-input", "remove-cell", "hide-input", "hide-cell")
SKIPPED = ("exercise", "solution", "dropdown")


def _blocks(text: str):
    """The chapter as ``(kind, content)`` in order: ``code``, ``skip`` (a directive a
    reader opens on purpose), ``math``, ``prose``."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)  # jupytext header
    fence = re.compile(r"^(`{3,})\{([\w:-]+)\}[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
    pos = 0
    for match in fence.finditer(text):
        yield "prose", text[pos : match.start()]
        name, body = match.group(2), match.group(3)
        if name == "code-cell":
            yield "code", body
        elif name in SKIPPED or ":class: dropdown" in body.split("\n\n")[0]:
            yield "skip", body
        else:  # theorem, definition, proof, note: read on the main path
            yield "prose", re.sub(r"^:[\w-]+:.*$", "", body, flags=re.M)
        pos = match.end()
    yield "prose", text[pos:]


def _words(prose: str) -> list[str]:
    prose = re.sub(r"\$\$.*?\$\$( \(eq-[\w-]+\))?", " ", prose, flags=re.S)
    prose = re.sub(r"\$[^$\n]+\$", " MATH ", prose)
    prose = re.sub(r"\{[\w:]+\}`[^`]*`", " REF ", prose)
    return re.findall(r"[A-Za-z0-9][\w'.,%-]*", prose)


def _cell_header(content: str) -> tuple[str, str]:
    """A code cell's metadata (a ``---`` block or ``:key:`` lines) and its code."""
    if content.startswith("---\n"):
        end = content.index("\n---\n", 3) + 5
        return content[:end], content[end:].strip("\n")
    lines = content.splitlines()
    n = next(
        (i for i, line in enumerate(lines) if not line.startswith(":")), len(lines)
    )
    return "\n".join(lines[:n]), "\n".join(lines[n:]).strip("\n")


def _shows_figure(code: str) -> bool:
    return "plt.show()" in code or "fig = " in code


def measure(text: str) -> dict:
    words = deeper = 0
    cell_lines, glued, sentences = [], 0, []
    stretch, longest, in_deeper = 0, 0, False
    for kind, content in _blocks(text):
        if kind == "code":
            header, code = _cell_header(content)
            if not any(tag in header for tag in HIDDEN):
                cell_lines.append(
                    len([line for line in code.splitlines() if line.strip()])
                )
            if _shows_figure(code):
                longest, stretch = max(longest, stretch), 0
            continue
        if kind != "prose":
            continue
        for paragraph in re.split(r"\n\s*\n", content):
            stripped = paragraph.strip()
            if not stripped:
                continue
            if stripped.startswith("#"):
                in_deeper = "going deeper" in stripped.lower() or (
                    in_deeper and stripped.startswith("###")
                )
                continue
            if "![" in stripped:
                longest, stretch = max(longest, stretch), 0
            n = len(_words(stripped))
            words += n
            deeper += n if in_deeper else 0
            stretch += n
            if not stripped.startswith("|"):
                glued += len(re.findall(r"\{glue:text\}`[^`:]+:[^`]+`", stripped))
                for item in re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", stripped):
                    flat = re.sub(r"\$[^$]*\$", "MATH", item.replace("\n", " "))
                    sentences += [
                        len(_words(s))
                        for s in re.split(r"(?<=[.?!])\s+(?=[A-Z*])", flat)
                    ]
    longest = max(longest, stretch)
    sentences = [n for n in sentences if n > 0]
    return {
        "words": words,
        "deeper": deeper,
        "cells": (
            statistics.median(cell_lines) if cell_lines else 0,
            max(cell_lines, default=0),
        ),
        "numbers/1000": round(1000 * glued / max(words, 1), 1),
        "no figure": longest,
        "long": round(100 * sum(n > 40 for n in sentences) / max(len(sentences), 1), 1),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="+")
    parser.add_argument("--rev", help="measure the version at this git revision")
    args = parser.parse_args(argv)
    print(
        "| chapter | words (going deeper) | visible cells, median / max lines | "
        "numbers per 1000 words | longest stretch without a figure | sentences > 40 "
        "words |"
    )
    print("|---|---|---|---|---|---|")
    for chapter in args.chapters:
        if args.rev:
            text = subprocess.run(
                ["git", "show", f"{args.rev}:{chapter}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        else:
            text = Path(chapter).read_text()
        m = measure(text)
        print(
            f"| {Path(chapter).stem} | {m['words']} ({m['deeper']}) | "
            f"{m['cells'][0]:g} / {m['cells'][1]} | {m['numbers/1000']} | "
            f"{m['no figure']} | {m['long']} % |"
        )


if __name__ == "__main__":
    main()
