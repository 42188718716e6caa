"""The sweep that chose the book's training recipe (icl_lib.training.recipe).

Trains variants of chapter 1's base model (d = 5, 21 points, noiseless) for a short
budget, one process per variant, and writes, for each, the error / d at k = d, 2d and 20
on fresh prompts and the label influence of every example at k = 20 relative to least
squares (icl_lib.analysis.influence): a model that ignores an example has a ratio near 0
there. The table lands in data/recipe_sweep.json.

    .venv/bin/python tools/recipe_sweep.py --steps 3000 --jobs 2
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from icl_lib.analysis.curves import error_curve  # noqa: E402
from icl_lib.analysis.influence import influence_ratio  # noqa: E402
from icl_lib.learners.linear import ols  # noqa: E402
from icl_lib.presets import get_preset  # noqa: E402
from icl_lib.tasks import linear_regression  # noqa: E402
from icl_lib.training.loop import Curriculum  # noqa: E402
from icl_lib.training.preset import train_preset  # noqa: E402
from icl_lib.training.samplers import RegressionPrompts  # noqa: E402

# Every variant changes one thing of the first: the recipe of the old base model with
# warm-up, cosine decay and clipping added.
CURRICULUM = RegressionPrompts(
    dims=Curriculum(2, 5, increment=1, interval=500),
    points=Curriculum(5, 21, increment=2, interval=250),
)
NO_CURRICULUM = RegressionPrompts(
    dims=Curriculum.constant(5), points=Curriculum.constant(21)
)
VARIANTS = {
    "learned positions, curriculum": {"positions": "learned", "task": CURRICULUM},
    "token types, curriculum": {"positions": "types", "task": CURRICULUM},
    "token types, no curriculum": {"positions": "types", "task": NO_CURRICULUM},
    "learned positions, no curriculum": {
        "positions": "learned",
        "task": NO_CURRICULUM,
    },
    "learned positions and token types, no curriculum": {
        "positions": "learned+types",
        "task": NO_CURRICULUM,
    },
}


def run(args) -> dict:
    label, steps = args
    torch.set_num_threads(1)
    spec = VARIANTS[label]
    base = get_preset("overview_noiseless")
    preset = dataclasses.replace(
        base,
        model=dataclasses.replace(base.model, positions=spec["positions"]),
        task=spec["task"],
        steps=steps,
        lr=1e-3,
        warmup_steps=steps // 20,
        cosine_decay=True,
        grad_clip=1.0,
        init_from="",
    )
    start = time.perf_counter()
    model, _ = train_preset(preset, progress=False)
    wall = time.perf_counter() - start
    batch = linear_regression(4096, 21, 5, seed=2024)
    errors = error_curve(model, batch, range(21))
    ratios = influence_ratio(model, ols, batch, 20)
    return {
        "variant": label,
        "steps": steps,
        "wall_seconds": round(wall, 1),
        "error_at_d": round(errors[5].item(), 5),
        "error_at_2d": round(errors[10].item(), 5),
        "error_at_20": round(errors[20].item(), 5),
        "min_influence_ratio_k20": round(ratios.min().item(), 3),
        "influence_ratio_k20": [round(r, 3) for r in ratios.tolist()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--out", default=str(ROOT / "data" / "recipe_sweep.json"))
    args = parser.parse_args()
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(run, [(v, args.steps) for v in args.variants]))
    # Rows of other budgets or variants already in the table are kept.
    out = Path(args.out)
    kept = json.loads(out.read_text())["rows"] if out.exists() else []
    done = {(row["variant"], row["steps"]) for row in rows}
    kept = [row for row in kept if (row["variant"], row["steps"]) not in done]
    out.write_text(json.dumps({"rows": kept + rows}, indent=1) + "\n")
    for row in rows:
        print({k: v for k, v in row.items() if k != "influence_ratio_k20"})


if __name__ == "__main__":
    main()
