"""One seeded training loop, named presets, and load-or-train checkpoints under ``data/``.

A preset (:class:`TrainConfig`) names everything a run depends on. :func:`train` runs it from
its seed, so the same preset gives the same weights; :func:`load_or_train` loads the committed
checkpoint (``data/<name>.safetensors`` and its manifest ``data/<name>.json``: config, seed,
steps, final metrics, training curve, sha256) or trains it. Regenerate any checkpoint with::

    python -m icl_lib.train overview_noiseless

The loop follows Garg et al. (2022): Adam, fresh prompts every step, squared error averaged over
every prefix of the prompt, and a curriculum that grows the dimension and the prompt length.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from ._checks import check_positive_int, check_real
from .evaluation import model_error_curve
from .models import GARG_STANDARD, ICLTransformer, TransformerConfig
from .paths import DATA_DIR
from .tasks import linear_regression, make_generator


@dataclass(frozen=True)
class Curriculum:
    """A quantity that starts at ``start`` and grows by ``increment`` every ``interval`` steps up to ``end``."""

    start: int  # value at step 0
    end: int  # final value, kept once reached
    increment: int = 0  # growth per interval (0: constant)
    interval: int = 1  # steps between increments

    def __post_init__(self):
        check_positive_int("start", self.start)
        check_positive_int("end", self.end)
        check_positive_int("increment", self.increment, minimum=0)
        check_positive_int("interval", self.interval)
        if self.end < self.start:
            raise ValueError(f"end: expected at least start = {self.start}, got {self.end}")

    def value(self, step: int) -> int:
        return min(self.end, self.start + self.increment * (step // self.interval))

    @classmethod
    def constant(cls, value: int) -> "Curriculum":
        return cls(value, value)


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run of an :class:`ICLTransformer` on linear regression depends on."""

    name: str  # checkpoint file stem under data/
    model: TransformerConfig  # architecture; model.n_dims and model.n_positions are the final sizes
    dims: Curriculum  # active input dimension over training (the rest is zero-padded)
    points: Curriculum  # (x, y) pairs per training prompt over training
    noise_std: float = 0.0  # label noise sigma of the training prompts
    steps: int = 10_000  # optimiser steps
    batch_size: int = 64  # fresh prompts per step
    lr: float = 1e-3  # Adam learning rate
    seed: int = 0  # fixes initialisation and every training prompt
    log_every: int = 100  # steps between points of the recorded training curve
    eval_size: int = 4096  # prompts in the final evaluation (drawn with seed + 1)
    description: str = ""  # what the preset is for
    init_from: str = ""  # preset whose committed checkpoint initialises the weights ("" = random init)
    cosine_decay: bool = False  # anneal the learning rate from lr to 0 along a cosine (else constant)

    def __post_init__(self):
        check_positive_int("steps", self.steps)
        check_positive_int("batch_size", self.batch_size)
        check_real("lr", self.lr, minimum=0.0, strict=True)
        check_real("noise_std", self.noise_std, minimum=0.0)
        if self.dims.end != self.model.n_dims:
            raise ValueError(f"dims: expected the curriculum to end at model.n_dims = {self.model.n_dims}, got {self.dims.end}")
        if self.points.end != self.model.n_positions:
            raise ValueError(
                f"points: expected the curriculum to end at model.n_positions = {self.model.n_positions}, got {self.points.end}"
            )

    def to_dict(self) -> dict:
        return asdict(self)


BOOK_MODEL = TransformerConfig(n_dims=5, n_positions=21, n_embd=64, n_layer=4, n_head=2)

PRESETS: dict[str, TrainConfig] = {
    cfg.name: cfg
    for cfg in (
        TrainConfig(
            name="overview_noiseless",
            model=BOOK_MODEL,
            dims=Curriculum(2, 5, increment=1, interval=500),
            points=Curriculum(5, 21, increment=2, interval=250),
            noise_std=0.0,
            steps=10_000,
            description="Chapter 1: d = 5 noiseless linear regression, 21 points (book preset, CPU).",
        ),
        # From scratch, the noisy task leaves its plateau far later than the noiseless one: the same
        # 10k-step recipe ended at a loss of 2.45, twice the Bayes predictor's 1.25, with error / d
        # stuck near 0.4 for k >= d. Starting from the noiseless model, a short run on noisy
        # prompts reaches the Bayes predictor.
        TrainConfig(
            name="overview_noisy",
            model=BOOK_MODEL,
            dims=Curriculum.constant(5),
            points=Curriculum.constant(21),
            noise_std=0.5,
            steps=8_000,
            lr=3e-4,
            seed=1,
            init_from="overview_noiseless",
            cosine_decay=True,
            description="Chapter 1: d = 5, label noise sigma = 0.5, 21 points; warm start from overview_noiseless (book preset, CPU).",
        ),
        TrainConfig(
            name="garg_standard",
            model=GARG_STANDARD,
            dims=Curriculum(5, 20, increment=1, interval=2000),
            points=Curriculum(11, 41, increment=2, interval=2000),
            noise_std=0.0,
            steps=500_000,
            batch_size=64,
            lr=1e-4,
            description="Garg et al. (2022)'s standard run at d = 20 (paper preset: a GPU for a day).",
        ),
    )
}


def get_preset(name: str) -> TrainConfig:
    """The preset called ``name`` (see ``PRESETS``)."""
    if name not in PRESETS:
        raise ValueError(f"name: expected one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]


def get_device() -> torch.device:
    """CUDA where present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def fit(model, loss_fn, *, steps: int, lr: float, log_every: int = 100, desc: str = "",
        progress: bool = True, grad_clip: float | None = None, on_log=None, cosine_decay: bool = False) -> dict:
    """The book's one training loop: Adam on ``loss_fn(step) -> scalar tensor`` for ``steps`` steps.

    ``loss_fn`` draws its own fresh batch for the step (from a generator the caller seeded), so
    the loop itself has no randomness. Returns the training curve ``{"step": [...], "loss": [...]}``
    with the mean loss over each ``log_every`` steps; ``on_log(step, curve)`` may add columns.
    ``cosine_decay`` anneals the learning rate to 0 over the run (for a precise final model).
    Used by :func:`train` and by chapters that train small models at build time.
    """
    check_positive_int("steps", steps)
    check_positive_int("log_every", log_every)
    optimiser = torch.optim.Adam(model.parameters(), lr=check_real("lr", lr, minimum=0.0, strict=True))
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=steps) if cosine_decay else None
    curve = {"step": [], "loss": []}
    running = 0.0
    bar = tqdm(range(steps), desc=desc, disable=not progress, mininterval=2.0)
    for step in bar:
        model.train()
        loss = loss_fn(step)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimiser.step()
        if schedule is not None:
            schedule.step()
        running += loss.item()
        if (step + 1) % log_every == 0:
            curve["step"].append(step + 1)
            curve["loss"].append(running / log_every)
            if on_log is not None:
                on_log(step, curve)
            bar.set_postfix(loss=f"{running / log_every:.4f}")
            running = 0.0
    model.eval()
    return curve


def train(config: TrainConfig, *, device=None, progress: bool = True, data_dir=None):
    """Train an :class:`ICLTransformer` from ``config.seed``; return ``(model, manifest)``.

    The manifest records the config, the training curve (mean loss per ``log_every`` steps, with
    the curriculum's values) and the final error per context size on ``eval_size`` fresh prompts.
    """
    device = torch.device(device) if device is not None else torch.device("cpu")
    torch.manual_seed(config.seed)
    model = ICLTransformer(config.model).to(device)
    init = None
    if config.init_from:  # warm start: continue from another preset's checkpoint
        start_model, init = load_checkpoint(config.init_from, data_dir)
        if start_model.config != config.model:
            raise ValueError(f"init_from: {config.init_from!r} has model {start_model.config}, expected {config.model}")
        model.load_state_dict(start_model.state_dict())
    gen = make_generator(config.seed)

    def loss_fn(step):
        d, n = config.dims.value(step), config.points.value(step)
        batch = linear_regression(config.batch_size, n, d, noise_std=config.noise_std, seed=gen).to(device)
        return ((model(batch.xs, batch.ys) - batch.ys) ** 2).mean()  # every prefix at once

    def record_curriculum(step, curve):
        curve.setdefault("dims", []).append(config.dims.value(step))
        curve.setdefault("points", []).append(config.points.value(step))

    start = time.perf_counter()
    curve = fit(model, loss_fn, steps=config.steps, lr=config.lr, log_every=config.log_every,
                desc=config.name, progress=progress, on_log=record_curriculum, cosine_decay=config.cosine_decay)
    wall = time.perf_counter() - start
    test = linear_regression(
        config.eval_size, config.model.n_positions, config.model.n_dims,
        noise_std=config.noise_std, seed=config.seed + 1,
    ).to(device)
    errors = model_error_curve(model, test, range(test.n_points), normalise=False).cpu()
    manifest = {
        "name": config.name,
        "init_from": {"preset": config.init_from, "sha256": init["sha256"]} if init else None,
        "config": config.to_dict(),
        "seed": config.seed,
        "steps": config.steps,
        "metrics": {
            "final_train_loss": curve["loss"][-1] if curve["loss"] else None,
            "eval_error_by_k": [round(e, 6) for e in errors.tolist()],
            "eval_prompts": config.eval_size,
        },
        "curve": curve,
        "n_params": model.n_params(),
        "wall_seconds": round(wall, 1),
        "environment": {"torch": torch.__version__, "python": platform.python_version(), "device": str(device),
                        "threads": torch.get_num_threads()},
    }
    return model.cpu().eval(), manifest


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checkpoint_paths(name: str, data_dir=None) -> tuple[Path, Path]:
    """``(weights, manifest)`` paths of the checkpoint ``name``."""
    data_dir = Path(data_dir) if data_dir is not None else DATA_DIR
    return data_dir / f"{name}.safetensors", data_dir / f"{name}.json"


def save_checkpoint(model: ICLTransformer, manifest: dict, data_dir=None) -> Path:
    """Write the weights (safetensors) and the manifest with the weights' sha256."""
    weights, meta = checkpoint_paths(manifest["name"], data_dir)
    weights.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    manifest = dict(manifest, sha256=_sha256(weights), weights=weights.name)
    meta.write_text(json.dumps(manifest, indent=1) + "\n")
    return weights


def load_checkpoint(name: str, data_dir=None):
    """Load the committed checkpoint ``name``; check its hash and that it matches the preset.

    Returns ``(model, manifest)``. Raises ``FileNotFoundError`` if it is missing and ``ValueError``
    if the file or its config disagrees with the manifest or the preset.
    """
    config = get_preset(name)
    weights, meta = checkpoint_paths(name, data_dir)
    if not weights.exists() or not meta.exists():
        raise FileNotFoundError(f"name: no checkpoint {weights} (+ .json); run `python -m icl_lib.train {name}`")
    manifest = json.loads(meta.read_text())
    if manifest.get("sha256") != _sha256(weights):
        raise ValueError(f"{weights}: sha256 differs from its manifest; retrain with `python -m icl_lib.train {name}`")
    if manifest.get("config") != json.loads(json.dumps(config.to_dict())):
        raise ValueError(f"{meta}: config differs from the preset {name!r}; retrain with `python -m icl_lib.train {name}`")
    model = ICLTransformer(config.model)
    model.load_state_dict(load_file(str(weights)))
    return model.eval(), manifest


def load_or_train(name: str, *, retrain: bool = False, data_dir=None, progress: bool = True):
    """The checkpoint ``name`` if it is committed (and ``retrain`` is false), else train and save it."""
    if not retrain:
        try:
            return load_checkpoint(name, data_dir)
        except FileNotFoundError:
            pass
    model, manifest = train(get_preset(name), device=get_device(), progress=progress, data_dir=data_dir)
    save_checkpoint(model, manifest, data_dir)
    return load_checkpoint(name, data_dir)


def _other_trainers() -> dict:
    """Presets of the other model kinds, each trained by its own module: name -> (module, takes a name)."""
    from . import contextual, kernel_classifier, lsa  # imported here: they import this module

    trainers = {name: (lsa, True) for name in lsa.LSA_PRESETS}
    trainers.update({name: (kernel_classifier, True) for name in kernel_classifier.PRESETS})
    trainers[contextual.IMPLICIT_BOOK.name] = (contextual, False)
    return trainers


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train book presets and write their checkpoints.")
    parser.add_argument("presets", nargs="*", help="preset names (none: list them all)")
    parser.add_argument("--data-dir", default=None, help="where to write (default: the repository's data/)")
    parser.add_argument("--list", action="store_true", help="list the presets and exit")
    args = parser.parse_args(argv)
    others = _other_trainers()
    if args.list or not args.presets:
        for name, cfg in sorted(PRESETS.items()):
            print(f"{name:26s} {cfg.steps:>8d} steps  {cfg.description}")
        for name, (module, _) in sorted(others.items()):
            print(f"{name:26s} trained by python -m {module.__name__}")
        return
    unknown = [name for name in args.presets if name not in PRESETS and name not in others]
    if unknown:
        parser.error(f"presets: expected names from {sorted(PRESETS) + sorted(others)}, got {unknown}")
    # One thread: the same weights whatever the machine's core count (and faster on a shared CPU).
    torch.set_num_threads(1)
    for name in args.presets:
        if name in others:
            module, takes_name = others[name]
            module.main(([name] if takes_name else []) + (["--data-dir", args.data_dir] if args.data_dir else []))
            continue
        model, manifest = train(get_preset(name), device=get_device(), data_dir=args.data_dir)
        path = save_checkpoint(model, manifest, args.data_dir)
        print(f"{name}: {manifest['wall_seconds']} s, final loss {manifest['metrics']['final_train_loss']:.4f} -> {path}")


if __name__ == "__main__":
    main()
