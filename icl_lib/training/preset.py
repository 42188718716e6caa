"""A preset: everything one training run depends on, and :func:`train_preset`, which
runs it.

A :class:`Preset` names the model (a config with ``build(seed)``, from
:mod:`icl_lib.models`), the prompts it trains on (a sampler from
:mod:`icl_lib.training.samplers`), the loss (a name in
:data:`icl_lib.training.losses.LOSSES`), the optimiser's settings and the evaluation
written to the manifest. The registry of every preset of the book is
:mod:`icl_lib.presets`.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .._checks import check_bool, check_positive_int, check_real, check_seed
from ..analysis.curves import accuracy_curve, error_curve, excess_error_curve, logged
from .checkpoints import MANIFEST_KEYS
from .loop import fit
from .losses import LOSSES

METRICS = ("error_by_k", "accuracy_by_k", "query_loss")
MONITOR_PROMPTS = 1024  # prompts per monitored set (sampler.monitor_batches)


@dataclass(frozen=True)
class Preset:
    """One named training run (Garg et al.'s ``conf/*.yaml``, as a frozen dataclass)."""

    name: str  # checkpoint file stem under data/
    chapter: str  # the chapter that uses it, e.g. "01_overview"
    description: (
        str  # what it is for, and whether it is a book (CPU) or paper (GPU) preset
    )
    model: object  # a model config with build(seed) -> nn.Module and to_dict()
    task: object  # a sampler of icl_lib.training.samplers: sample, eval_batch, state
    loss: str  # training loss, a key of LOSSES
    metric: str  # evaluation on eval_size fresh prompts (seed + 1), one of METRICS
    steps: int  # optimiser steps
    batch_size: int  # fresh prompts per step
    lr: float  # Adam learning rate
    seed: int = 0  # fixes the initialisation and every training prompt
    log_every: int = 100  # steps between points of the training curve
    grad_clip: float | None = None  # clip the gradient norm (None: no clipping)
    cosine_decay: bool = False  # anneal the learning rate from lr to 0 along a cosine
    warmup_steps: int = 0  # linear warm-up of the learning rate over the first steps
    init_from: str = ""  # preset whose checkpoint initialises the weights ("": fresh)
    eval_size: int = 4096  # prompts of the final evaluation
    # A paper-scale run (a GPU for hours): the book commits no checkpoint of it, and
    # `python -m icl_lib.presets --stale` leaves it alone.
    paper: bool = False
    # Why a book preset does not follow the book's recipe (icl_lib.training.recipe),
    # "" when it does. It documents the run and does not change it, so it stays out of
    # the manifest (and a new reason does not make a checkpoint stale).
    off_recipe: str = field(default="", metadata={"manifest": False})

    def __post_init__(self):
        for name in ("steps", "batch_size", "log_every", "eval_size"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("warmup_steps", self.warmup_steps, minimum=0)
        check_seed("seed", self.seed)
        check_real("lr", self.lr, minimum=0.0, strict=True)
        for name in ("name", "chapter", "description", "init_from"):
            if not isinstance(getattr(self, name), str):
                kind = type(getattr(self, name)).__name__
                raise TypeError(f"{name}: expected a string, got {kind}")
        if not self.name:
            raise ValueError("name: expected a checkpoint file stem, got ''")
        if self.grad_clip is not None:
            check_real("grad_clip", self.grad_clip, minimum=0.0, strict=True)
        check_bool("cosine_decay", self.cosine_decay)
        check_bool("paper", self.paper)
        if not isinstance(self.off_recipe, str):
            raise TypeError(
                f"off_recipe: expected a string (the reason, or ''), got "
                f"{type(self.off_recipe).__name__}"
            )
        if self.loss not in LOSSES:
            raise ValueError(
                f"loss: expected one of {sorted(LOSSES)}, got {self.loss!r}"
            )
        if self.metric not in METRICS:
            raise ValueError(f"metric: expected one of {METRICS}, got {self.metric!r}")
        for part in ("model", "task"):
            if not hasattr(getattr(self, part), "to_dict"):
                raise TypeError(
                    f"{part}: expected a config with to_dict(), got "
                    f"{type(getattr(self, part)).__name__}"
                )

    def build(self) -> torch.nn.Module:
        """The model, freshly initialised from ``seed``."""
        return self.model.build(seed=self.seed)

    def to_dict(self) -> dict:
        """The preset as plain data (the manifest's ``preset`` entry)."""
        out = {}
        for name, spec in self.__dataclass_fields__.items():
            if not spec.metadata.get("manifest", True):
                continue
            value = getattr(self, name)
            if name == "model":
                value = {"type": type(value).__name__, **value.to_dict()}
            elif name == "task":
                value = value.to_dict()
            out[name] = value
        return out


def evaluate(preset: Preset, model: torch.nn.Module, device=None) -> dict:
    """The preset's metric on ``eval_size`` fresh prompts drawn with ``seed + 1``."""
    device = (
        torch.device(device) if device is not None else next(model.parameters()).device
    )
    batch = preset.task.eval_batch(preset.eval_size, preset.seed + 1).to(device=device)
    ks = range(batch.n_points)
    if preset.metric == "error_by_k":
        values = error_curve(model, batch, ks, normalise=False).cpu()
        result = {"eval_error_by_k": [round(v, 6) for v in values.tolist()]}
    elif preset.metric == "accuracy_by_k":
        values = accuracy_curve(model, batch, ks).cpu()
        result = {"eval_accuracy_by_k": [round(v, 4) for v in values.tolist()]}
    else:
        with torch.no_grad():
            result = {
                "eval_loss": round(LOSSES[preset.loss](model.eval(), batch).item(), 6)
            }
    return {**result, "eval_prompts": preset.eval_size}


def train_preset(
    preset: Preset,
    *,
    init=None,
    device=None,
    progress: bool = True,
    state_file=None,
    save_every: int = 1000,
):
    """Run ``preset`` from its seed; returns ``(model, manifest)`` (the manifest without
    hash).

    ``init`` is ``(model, sha256)`` of the checkpoint named by ``preset.init_from`` (a
    warm start: its weights are copied in after the fresh initialisation, so the seed
    still fixes every training prompt).

    With ``state_file`` (a path) the run can be cut and resumed: every ``save_every``
    steps it writes its whole state there (atomically), a run started with an existing
    ``state_file`` of the same preset and parent continues from it, and the file is
    removed when the run completes. The result is the same, bit for bit, as one
    uninterrupted run; ``wall_seconds`` adds up the sittings.
    """
    if not isinstance(preset, Preset):
        raise TypeError(f"preset: expected a Preset, got {type(preset).__name__}")
    if bool(preset.init_from) != (init is not None):
        raise ValueError(
            f"init: expected the checkpoint of {preset.init_from!r} exactly when "
            "init_from is set"
        )
    device = torch.device(device) if device is not None else torch.device("cpu")
    model = preset.build().to(device)
    if init is not None:
        # A model with another head than its parent says how to start from it.
        if hasattr(model, "warm_start"):
            model.warm_start(init[0])
        else:
            model.load_state_dict(init[0].state_dict())
    gen = torch.Generator().manual_seed(preset.seed)
    loss = LOSSES[preset.loss]
    identity = {
        "preset": json.loads(json.dumps(preset.to_dict())),
        "init_sha256": init[1] if init is not None else None,
    }
    resume, wall_before = None, 0.0
    if state_file is not None:
        state_file = Path(state_file)
        if state_file.exists():
            resume = torch.load(state_file, map_location=device, weights_only=True)
            for key, value in identity.items():
                if resume.get(key) != value:
                    raise ValueError(
                        f"state_file: {state_file} belongs to another run (its {key} "
                        "differs from this one's); remove it to start afresh"
                    )
            wall_before = resume["wall_seconds"]
    # The devices of the run's sittings, in order (states from before this record
    # were all written on a CPU): a run whose sittings ran on other devices is not
    # the same, bit for bit, as one on a single device, and its manifest says so.
    devices = list(resume.get("devices", ["cpu"])) if resume is not None else []
    if not devices or devices[-1] != str(device):
        devices.append(str(device))

    def loss_fn(step):
        return loss(
            model, preset.task.sample(preset.batch_size, step, gen).to(device=device)
        )

    # Samplers with monitor_batches (pool and fresh tasks) add the model's mean
    # excess error / d on each set of prompts to the curve.
    monitors = {}
    if hasattr(preset.task, "monitor_batches"):
        monitors = preset.task.monitor_batches(MONITOR_PROMPTS, preset.seed + 2)
        monitors = {key: batch.to(device=device) for key, batch in monitors.items()}

    def record_state(step, curve):
        for key, value in preset.task.state(step).items():
            curve.setdefault(key, []).append(value)
        for key, batch in monitors.items():
            error = excess_error_curve(model, batch, range(batch.n_points)).mean()
            curve.setdefault(f"{key}_error", []).append(round(error.item(), 6))
        # Samplers with monitor (chapter 6's induction documents) log what they
        # measure on the model: ICL score, per-head attention scores.
        if hasattr(preset.task, "monitor"):
            for key, value in preset.task.monitor(model).items():
                curve.setdefault(key, []).append(value)

    start = time.perf_counter()

    def save_state(state):
        state = {
            **state,
            **identity,
            "devices": devices,
            "wall_seconds": wall_before + time.perf_counter() - start,
        }
        partial = state_file.with_name(state_file.name + ".partial")
        torch.save(state, partial)
        os.replace(partial, state_file)  # a run cut while saving keeps the last state

    curve = fit(
        model,
        loss_fn,
        steps=preset.steps,
        lr=preset.lr,
        log_every=preset.log_every,
        desc=preset.name,
        progress=progress,
        grad_clip=preset.grad_clip,
        on_log=record_state,
        cosine_decay=preset.cosine_decay,
        warmup_steps=preset.warmup_steps,
        generator=gen,
        resume=resume,
        save_state=save_state if state_file is not None else None,
        save_every=save_every,
    )
    wall = wall_before + time.perf_counter() - start
    if state_file is not None:
        state_file.unlink(missing_ok=True)
    metrics = {
        "final_train_loss": curve["loss"][-1] if curve["loss"] else None,
        "loss_change_last_fifth": loss_change_last_fifth(curve),
        **evaluate(preset, model, device),
    }
    manifest = {
        "name": preset.name,
        "chapter": preset.chapter,
        "description": preset.description,
        "preset": preset.to_dict(),
        "seed": preset.seed,
        "steps": preset.steps,
        "init_from": {"preset": preset.init_from, "sha256": init[1]} if init else None,
        "curve": curve,
        "metrics": metrics,
        "n_params": sum(p.numel() for p in model.parameters()),
        "wall_seconds": round(wall, 1),
        "environment": environment("+".join(devices)),
        "weights": None,
        "sha256": None,
    }
    # one layout for every checkpoint (manifest_sha256 is added when it is written)
    assert tuple(manifest) == MANIFEST_KEYS[:-1]
    return model.cpu().eval(), manifest


def loss_change_last_fifth(curve: dict) -> float | None:
    """The evidence of convergence written to every manifest: the relative change of
    the training loss over the last fifth of the run,
    ``mean(last tenth) / mean(tenth before the last fifth) - 1``, over the logged
    points (about -0.01 for a run that has settled, far below that for one still
    descending). ``None`` for a curve of fewer than 10 points."""
    if not isinstance(curve, dict):
        raise TypeError(f"curve: expected a dict, got {type(curve).__name__}")
    if curve.get("step") == []:  # a run too short to log
        return None
    _, losses = logged(curve, "loss")  # increasing steps, finite losses
    n = len(losses)
    if n < 10:
        return None
    tenth = n // 10
    before = losses[n - n // 5 - tenth : n - n // 5]
    last = losses[n - tenth :]
    return round(sum(last) / len(last) / (sum(before) / len(before)) - 1.0, 4)


def environment(device) -> dict:
    """What a training run ran on (the manifest's ``environment``); ``device`` is
    e.g. ``"cpu"``, or ``"cpu+cuda"`` for a run resumed on another device."""
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            "device: expected a device name or torch.device, got "
            f"{type(device).__name__}"
        )
    for part in str(device).split("+"):
        try:
            torch.device(part)
        except RuntimeError as error:
            raise ValueError(
                f"device: expected a torch device, got {device!r}"
            ) from error
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": str(device),
        "threads": torch.get_num_threads(),
    }
