"""Measure a chapter against the house style: the numbers of the lecture-ready issues.

    python tools/style_metrics.py chapters/02_gd_theory.md [more chapters]
    python tools/style_metrics.py --rev HEAD~3 chapters/02_gd_theory.md  # older
    python tools/style_metrics.py --lecture chapters/*_*.md  # the lecture issues' table

With ``--lecture`` it measures the lecture alone, from the top of the chapter to
``## What this chapter checked``, against the lecture issues' targets: words, computed
numbers (glued numbers and typed decimals) per 1000 words, the longest stretch without
a figure, ledger words (the scoring vocabulary that belongs after the lecture) and the
visible code cells.

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
* ``long``: the share of main-path sentences over 40 words;
* ``ledger`` (``--lecture``): ledger words on the main path: goal, pass, miss,
  undecided, mark, standard error, claim, verdict, ledger, in any inflection, typed or
  carried by a glued value whose name says it is a verdict (``..._verdict``); "forward
  pass" and "passes over the data" are the field's words, not the ledger's;
* ``decimals`` (``--lecture``): typed decimals in main-path prose outside tables and
  math, counted with the glued numbers.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
from pathlib import Path

LECTURE_END = "## What this chapter checked"
LEDGER_WORDS = re.compile(
    r"\b(goals?|pass(?:es|ed|ing)?|miss(?:es|ed|ing)?|undecided|marks?|"
    r"standard errors?|claims?|claimed|verdicts?|ledgers?)\b",
    re.I,
)
# The field's own uses of two of those words: a forward pass, passes of SGD over the
# data, a line that marks a value.
_FIELD_BEFORE = re.compile(
    r"(forward|backward|one|single|each|every|few|many|more|fewer|SGD|\d[\d,]*|of|"
    r"line|lines|arrow|dot|band|cross|and)\W*$",
    re.I,
)
_FIELD_AFTER = re.compile(r"^\W*(over|through|of SGD|where)\b", re.I)


def ledger_words(prose: str) -> list:
    """The ledger words of ``prose`` (matches of :data:`LEDGER_WORDS`), leaving out
    "pass" and "mark" where they are the field's words ("one forward pass", "100 passes
    of SGD", "the dotted line marks k = d")."""
    found = []
    for match in LEDGER_WORDS.finditer(prose):
        word = match.group(1).lower()
        if word.startswith(("pass", "mark")):
            before = prose[max(0, match.start() - 20) : match.start()]
            after = prose[match.end() : match.end() + 20]
            if _FIELD_BEFORE.search(before) or _FIELD_AFTER.search(after):
                continue
        found.append(match)
    return found


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


def lecture(text: str) -> str:
    """The chapter up to ``## What this chapter checked`` (all of it if it has none)."""
    end = text.find("\n" + LECTURE_END)
    return text if end < 0 else text[: end + 1]


def _ledger_words(prose: str) -> int:
    prose = re.sub(r"\$[^$\n]+\$", " ", prose)
    glued = len(re.findall(r"\{glue:text\}`[^`]*verdict[^`]*`", prose))
    prose = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", prose)  # roles: refs, glue, cite
    prose = re.sub(r"\([\w-]+\)=|\]\([^)]*\)", " ", prose)  # labels, link targets
    return glued + len(ledger_words(prose))


def _decimals(prose: str) -> int:
    prose = re.sub(r"\$[^$\n]+\$", " ", prose)
    prose = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", prose)
    return len(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", prose))


def measure(text: str) -> dict:
    words = deeper = ledger = decimals = 0
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
            ledger += _ledger_words(stripped)
            if not stripped.startswith("|"):
                decimals += _decimals(stripped)
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
        "ledger": ledger,
        "computed/1000": round(1000 * (glued + decimals) / max(words, 1), 1),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="+")
    parser.add_argument("--rev", help="measure the version at this git revision")
    parser.add_argument(
        "--lecture",
        action="store_true",
        help="measure only the lecture (up to '## What this chapter checked') against "
        "the lecture issues' targets",
    )
    args = parser.parse_args(argv)
    texts = {}
    for chapter in args.chapters:
        if args.rev:
            texts[chapter] = subprocess.run(
                ["git", "show", f"{args.rev}:{chapter}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        else:
            texts[chapter] = Path(chapter).read_text()
    if args.lecture:
        print(
            "| chapter | words (<= 3500) | computed numbers per 1000 words (<= 3) | "
            "longest stretch without a figure (<= 1000) | ledger words (0) | visible "
            "cells, median / max lines (<= 12 / 25) |"
        )
        print("|---|---|---|---|---|---|")
        for chapter, text in texts.items():
            m = measure(lecture(text))
            print(
                f"| {Path(chapter).stem} | {m['words']} | {m['computed/1000']} | "
                f"{m['no figure']} | {m['ledger']} | {m['cells'][0]:g} / "
                f"{m['cells'][1]} |"
            )
        return
    print(
        "| chapter | words (going deeper) | visible cells, median / max lines | "
        "numbers per 1000 words | longest stretch without a figure | sentences > 40 "
        "words |"
    )
    print("|---|---|---|---|---|---|")
    for chapter, text in texts.items():
        m = measure(text)
        print(
            f"| {Path(chapter).stem} | {m['words']} ({m['deeper']}) | "
            f"{m['cells'][0]:g} / {m['cells'][1]} | {m['numbers/1000']} | "
            f"{m['no figure']} | {m['long']} % |"
        )


if __name__ == "__main__":
    main()
