"""``python -m icl_lib.presets [NAME ...]``: list every preset, or train the named
ones; ``--stale`` retrains every stale checkpoint (:mod:`icl_lib.presets.retrain`)."""

from __future__ import annotations

import argparse
import sys

import torch

from ..training.checkpoints import checkpoint_paths, checkpoint_state
from . import PRESETS, train
from .retrain import retrain_stale


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m icl_lib.presets",
        description="List the book's training presets, or train some and write their "
        "checkpoints.",
    )
    parser.add_argument("presets", nargs="*", help="preset names (none: list them all)")
    parser.add_argument(
        "--data-dir", default=None, help="where to write (default: data/)"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite existing checkpoints without asking",
    )
    parser.add_argument(
        "--stale",
        action="store_true",
        help="retrain every stale book checkpoint in dependency order",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="with --stale: runs at once (default 2)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="with --stale: only list them"
    )
    parser.add_argument(
        "--exclude",
        nargs="*",
        default=[],
        help="with --stale: presets to leave alone (and their descendants)",
    )
    args = parser.parse_args(argv)
    if args.stale:
        if args.presets:
            parser.error("presets: expected none with --stale")
        if args.jobs < 1:
            parser.error(f"--jobs: expected at least 1, got {args.jobs}")
        try:
            retrain_stale(
                args.jobs, args.data_dir, dry_run=args.dry_run, exclude=args.exclude
            )
        except ValueError as error:
            parser.error(str(error))
        return
    if not args.presets:
        for name, preset in sorted(
            PRESETS.items(), key=lambda item: (item[1].chapter, item[0])
        ):
            print(
                f"{name:26s} {preset.chapter:22s} {preset.steps:>8d} steps  "
                f"{preset.description}"
            )
        return
    unknown = [name for name in args.presets if name not in PRESETS]
    if unknown:
        parser.error(f"presets: expected names from {sorted(PRESETS)}, got {unknown}")
    existing = [
        name
        for name in args.presets
        if checkpoint_state(name, args.data_dir) != "missing"
    ]
    if existing and not args.force and not _confirm(existing, args.data_dir):
        parser.error(
            f"presets: {existing} already have checkpoints; pass --force to "
            "overwrite them"
        )
    # One thread: the same weights whatever the machine's core count.
    torch.set_num_threads(1)
    for name in args.presets:
        _, manifest = train(name, data_dir=args.data_dir)
        loss = manifest["metrics"]["final_train_loss"]
        print(f"{name}: {manifest['wall_seconds']} s, final loss {loss:.4f}")


def _confirm(names, data_dir) -> bool:
    """Ask on a terminal before overwriting committed checkpoints; elsewhere (a
    script, CI) the answer is no, and --force is needed."""
    if not sys.stdin.isatty():
        return False
    paths = ", ".join(str(checkpoint_paths(name, data_dir)[0]) for name in names)
    return input(f"overwrite {paths}? [y/N] ").strip().lower() in ("y", "yes")


if __name__ == "__main__":
    main()
