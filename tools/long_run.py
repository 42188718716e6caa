"""Train a preset at a longer budget than one sitting allows, in sittings.

    python tools/long_run.py overview_noiseless --steps 450000    # run, or continue
    python tools/long_run.py overview_noiseless --steps 450000 --snapshot  # at the end

trains the book preset ``overview_noiseless`` under the book's recipe
(:func:`icl_lib.training.recipe.recipe`) with ``--steps`` in place of its committed
budget, on one thread. Every ``--save-every`` steps the whole state of the run
(weights, optimiser, schedule, curve, generator) is written to
``data/long_runs/work/<name>.state``, which git ignores, so the process may be killed at
any time and the same command continues where the last state left off; the result is the
same, bit for bit, as one uninterrupted run.

Between sittings the state travels through git: ``--snapshot`` copies it to
``data/long_runs/<name>.state``, which is committed once at the end of a sitting (not at
every save, which would fill the history with copies), and a later sitting on a fresh
clone resumes from that snapshot when it is further along than its own state.

A sitting may run on a GPU (``--device cuda``) and the next on a CPU: the data stream
is drawn on the CPU either way, but the arithmetic differs, so such a run is not the
same, bit for bit, as one on a CPU alone, and its manifest's ``environment`` lists the
devices of its sittings (``"cpu+cuda+cpu"``).

When the run completes, its checkpoint (weights and manifest) is written to
``data/long_runs/``, not to ``data/``: adopting it means setting the preset's steps in
:mod:`icl_lib.presets` to ``--steps``, moving the two files into ``data/`` and
retraining the presets that warm-start from it (``make retrain``). Until then the book
builds from the committed checkpoint.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from icl_lib.presets import PRESETS, load_checkpoint  # noqa: E402
from icl_lib.training.checkpoints import save_checkpoint  # noqa: E402
from icl_lib.training.preset import train_preset  # noqa: E402
from icl_lib.training.recipe import recipe  # noqa: E402

OUT = ROOT / "data" / "long_runs"  # committed: snapshots between sittings, the result
# Not committed (.gitignore), nor under _build, which `make clean` removes: the state
# saved during a sitting.
WORK = ROOT / "data" / "long_runs" / "work"


def saved_step(path: Path) -> int:
    """The step a saved state has reached (0 when there is none)."""
    if not path.exists():
        return 0
    return int(torch.load(path, map_location="cpu", weights_only=True)["step"])


def longer(name: str, steps: int):
    """Book preset ``name`` with ``steps`` optimiser steps under the book's recipe."""
    if name not in PRESETS:
        raise SystemExit(f"preset: expected one of {sorted(PRESETS)}, got {name!r}")
    preset = PRESETS[name]
    if not (preset.cosine_decay and preset.warmup_steps):
        raise SystemExit(
            f"preset: {name!r} does not follow the book's recipe (warm-up and cosine "
            "decay), so its budget cannot be scaled by this command"
        )
    if steps <= preset.steps:
        raise SystemExit(
            f"--steps: expected more than the committed {preset.steps}, got {steps}"
        )
    return dataclasses.replace(preset, **recipe(steps, preset.lr, preset.batch_size))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("preset", help="a book preset that follows the recipe")
    parser.add_argument("--steps", type=int, required=True, help="the longer budget")
    parser.add_argument("--save-every", type=int, default=1000, help="steps per state")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument(
        "--snapshot",
        action="store_true",
        help="copy this sitting's state to data/long_runs/ for committing, then exit",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the weights must not depend on the machine's cores
    preset = longer(args.preset, args.steps)
    init = None
    if preset.init_from:
        parent, manifest = load_checkpoint(preset.init_from)
        init = (parent, manifest["sha256"])
    OUT.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    work, snapshot = WORK / f"{preset.name}.state", OUT / f"{preset.name}.state"
    if args.snapshot:
        if not work.exists():
            raise SystemExit(f"--snapshot: no state of this sitting at {work}")
        shutil.copyfile(work, snapshot)
        print(f"snapshot: {snapshot} at step {saved_step(snapshot)}; commit it")
        return
    if saved_step(snapshot) > saved_step(work):  # a fresh clone, or a later sitting
        shutil.copyfile(snapshot, work)
    model, manifest = train_preset(
        preset,
        init=init,
        device=args.device,
        state_file=work,
        save_every=args.save_every,
    )
    path = save_checkpoint(model, manifest, OUT)
    snapshot.unlink(missing_ok=True)  # the run is complete: its checkpoint replaces it
    print(f"done: {path} ({manifest['wall_seconds']:.0f} s in all)")


if __name__ == "__main__":
    main()
