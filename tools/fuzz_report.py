"""Fuzz icl_lib's public API as tests/test_api_fuzz.py does; print the outcomes.

    python tools/fuzz_report.py          # counts (clear / raw / silent / hang), holes
    python tools/fuzz_report.py --write  # rewrite the suite's backlog

``--write`` is for after new fixtures: it only removes entries from the backlog, and it
refuses a callable without fixtures that is not already in it (issue 24).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import api_fuzz  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the lists")
    args = parser.parse_args()
    backlog = set(api_fuzz.BACKLOG)
    api_fuzz.BACKLOG.clear()
    rows, no_baseline, broken = api_fuzz.survey(examples=api_fuzz.EXAMPLES)
    counts = collections.Counter(row[3] for row in rows)
    public = api_fuzz.public_callables()
    exempt = [name for name in public if api_fuzz.exemption(name)]
    print(
        f"{len(public)} public callables: {len({r[0] for r in rows})} fuzzed, "
        f"{len(exempt)} exempt, {len(no_baseline)} without fixtures, "
        f"{len(broken)} whose baseline fails"
    )
    total = sum(counts.values())
    for kind in ("clear", "raw", "silent", "hang"):
        print(f"  {kind:7s} {counts[kind]:5d}  ({100 * counts[kind] / total:.1f} %)")
    for name, error in broken.items():
        print("baseline fails:", name, error)
    for row in rows:
        if row[3] != "clear":
            print(f"{row[3]:6s} {row[0]} {row[1]} ({row[2]}): {row[4][:120]}")
    if args.write:
        joined = sorted(set(no_baseline) - backlog)
        if joined:  # the backlog only shrinks (tests/test_api_fuzz.py)
            raise SystemExit(f"no fixtures for {joined}: add them, not a backlog entry")
        (ROOT / "tests" / "api_fuzz_backlog.txt").write_text(
            "".join(f"{name}\n" for name in sorted(set(no_baseline) & backlog))
        )


if __name__ == "__main__":
    main()
