"""A small softmax transformer trained for in-context classification on the sphere (chapter 8).

The model is chapter 1's :class:`~icl_lib.models.ICLTransformer` (GPT-style, tokens ``x_i`` and
``(y_i, 0, ..., 0)``), read as a classifier: its output at the token ``x_k`` is a logit for
``y_k in {-1, +1}`` given the ``k`` examples before it. It is trained on
:func:`~icl_lib.kernel_tasks.sphere_classification` prompts (labels ``sign(f)``, ``f`` a Gaussian
process with the ``exp`` kernel) with the logistic loss over every prefix, by the book's one
loop :func:`~icl_lib.train.fit`. Chapter 8 reads its attention the way Han et al. (TMLR 2025)
read GPT-J's. Regenerate the committed checkpoint with::

    python -m icl_lib.kernel_classifier kernel_classifier
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from ._checks import check_positive_int, check_real
from .kernel_tasks import sphere_classification
from .models import ICLTransformer, TransformerConfig
from .tasks import make_generator
from .train import checkpoint_paths, fit, get_device, save_checkpoint


@dataclass(frozen=True)
class ClassifierConfig:
    """Everything a training run of the in-context classifier depends on."""

    name: str  # checkpoint file stem under data/
    model: TransformerConfig  # architecture; model.n_positions is the prompt length
    kernel: str = "exp"  # kernel of the Gaussian process whose sign gives the labels
    steps: int = 6000  # optimiser steps
    batch_size: int = 64  # fresh prompts per step
    lr: float = 1e-3  # Adam learning rate
    seed: int = 0  # fixes initialisation and every training prompt
    log_every: int = 100  # steps between points of the recorded training curve
    eval_size: int = 4096  # prompts in the final evaluation (drawn with seed + 1)
    description: str = ""  # what the preset is for

    def __post_init__(self):
        check_positive_int("steps", self.steps)
        check_positive_int("batch_size", self.batch_size)
        check_real("lr", self.lr, minimum=0.0, strict=True)

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, ClassifierConfig] = {
    cfg.name: cfg
    for cfg in (
        ClassifierConfig(
            name="kernel_classifier",
            model=TransformerConfig(n_dims=5, n_positions=16, n_embd=64, n_layer=4, n_head=4),
            steps=6000,
            description="Chapter 8: in-context classification y = sign(f), f ~ GP(exp kernel) on the sphere "
                        "of R^5, 16 points (book preset, CPU).",
        ),
        ClassifierConfig(
            name="kernel_classifier_paper",
            model=TransformerConfig(n_dims=5, n_positions=64, n_embd=256, n_layer=12, n_head=8),
            steps=200_000,
            lr=1e-4,
            description="Chapter 8 at GPT-2 scale, 64 points (paper-scale preset: a GPU for hours).",
        ),
    )
}


def get_preset(name: str) -> ClassifierConfig:
    """The classifier preset called ``name``."""
    if name not in PRESETS:
        raise ValueError(f"name: expected one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]


def logistic_loss(logits: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """Mean of ``log(1 + exp(-y * logit))`` over every prompt and prefix (labels in ``{-1, +1}``)."""
    return F.softplus(-ys * logits).mean()


@torch.no_grad()
def accuracy_by_context_size(model: ICLTransformer, xs, ys) -> torch.Tensor:
    """Fraction of prompts where ``sign(logit_k) = y_k``, for every context size ``k``: ``(n,)``."""
    model.eval()
    logits = model(xs, ys)
    return (torch.where(logits >= 0, 1.0, -1.0) == ys).double().mean(0)


def train_classifier(config: ClassifierConfig, *, device=None, progress: bool = True):
    """Train the classifier from ``config.seed``; return ``(model, manifest)``."""
    device = torch.device(device) if device is not None else torch.device("cpu")
    torch.manual_seed(config.seed)
    model = ICLTransformer(config.model).to(device)
    gen = make_generator(config.seed)
    n, d = config.model.n_positions, config.model.n_dims

    def loss_fn(step):
        batch = sphere_classification(config.batch_size, n, d, config.kernel, seed=gen)
        return logistic_loss(model(batch.xs.to(device), batch.ys.to(device)), batch.ys.to(device))

    start = time.perf_counter()
    curve = fit(model, loss_fn, steps=config.steps, lr=config.lr, log_every=config.log_every,
                desc=config.name, progress=progress)
    wall = time.perf_counter() - start
    test = sphere_classification(config.eval_size, n, d, config.kernel, seed=config.seed + 1)
    acc = accuracy_by_context_size(model, test.xs.to(device), test.ys.to(device)).cpu()
    manifest = {
        "name": config.name,
        "config": config.to_dict(),
        "seed": config.seed,
        "steps": config.steps,
        "metrics": {
            "final_train_loss": curve["loss"][-1] if curve["loss"] else None,
            "eval_accuracy_by_k": [round(a, 4) for a in acc.tolist()],
            "eval_prompts": config.eval_size,
        },
        "curve": curve,
        "n_params": model.n_params(),
        "wall_seconds": round(wall, 1),
        "environment": {"torch": torch.__version__, "python": platform.python_version(), "device": str(device)},
    }
    return model.cpu().eval(), manifest


def load_classifier(name: str = "kernel_classifier", data_dir=None):
    """Load the committed classifier ``name``; check its sha256 and its config against the preset.

    Returns ``(model, manifest)``; raises ``FileNotFoundError`` if it is missing and ``ValueError``
    if the file or its config disagree with the manifest or the preset.
    """
    config = get_preset(name)
    weights, meta = checkpoint_paths(name, data_dir)
    if not weights.exists() or not meta.exists():
        raise FileNotFoundError(f"name: no checkpoint {weights} (+ .json); run `python -m icl_lib.kernel_classifier {name}`")
    manifest = json.loads(meta.read_text())
    if manifest.get("sha256") != hashlib.sha256(Path(weights).read_bytes()).hexdigest():
        raise ValueError(f"{weights}: sha256 differs from its manifest; retrain with `python -m icl_lib.kernel_classifier {name}`")
    if manifest.get("config") != json.loads(json.dumps(config.to_dict())):
        raise ValueError(f"{meta}: config differs from the preset {name!r}; retrain with `python -m icl_lib.kernel_classifier {name}`")
    model = ICLTransformer(config.model)
    model.load_state_dict(load_file(str(weights)))
    return model.eval(), manifest


def load_or_train_classifier(name: str = "kernel_classifier", *, retrain: bool = False, data_dir=None,
                             progress: bool = True):
    """The committed classifier ``name`` if present (and ``retrain`` is false), else train and save it."""
    if not retrain:
        try:
            return load_classifier(name, data_dir)
        except FileNotFoundError:
            pass
    model, manifest = train_classifier(get_preset(name), device=get_device(), progress=progress)
    save_checkpoint(model, manifest, data_dir)
    return load_classifier(name, data_dir)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train chapter 8's in-context classifier presets.")
    parser.add_argument("presets", nargs="*", help=f"preset names: {', '.join(sorted(PRESETS))}")
    parser.add_argument("--data-dir", default=None, help="where to write (default: the repository's data/)")
    args = parser.parse_args(argv)
    if not args.presets:
        for name, cfg in sorted(PRESETS.items()):
            print(f"{name:26s} {cfg.steps:>8d} steps  {cfg.description}")
        return
    for name in args.presets:
        model, manifest = train_classifier(get_preset(name), device=get_device())
        path = save_checkpoint(model, manifest, args.data_dir)
        print(f"{name}: {manifest['wall_seconds']} s, final loss {manifest['metrics']['final_train_loss']:.4f} -> {path}")


if __name__ == "__main__":
    main()
