"""The book's one training loop, and the curriculum of Garg et al. (2022).

:func:`fit` runs Adam on a loss that draws its own fresh batch each step; the loop
itself has no randomness, so a run is fixed by the generator its loss draws from.
:func:`fit_on_prompts` is the loop for a predictor trained on prompt batches (a sampler
and a loss from :mod:`icl_lib.training.losses`). Every model of the book is trained by
these two functions: the presets (:mod:`icl_lib.presets`) and the small models chapters
train at build time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from tqdm.auto import tqdm

from .._checks import (
    check_bool,
    check_module,
    check_optional_instance,
    check_positive_int,
    check_real,
)
from ..prompts import PromptBatch
from ..runtime import make_generator


@dataclass(frozen=True)
class Curriculum:
    """A quantity that starts at ``start`` and grows by ``increment`` every ``interval``
    steps.

    Garg et al. (2022) grow the input dimension and the prompt length this way.
    """

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
            raise ValueError(
                f"end: expected at least start = {self.start}, got {self.end}"
            )

    def value(self, step: int) -> int:
        """The value at training step ``step`` (0-based)."""
        check_positive_int("step", step, minimum=0)
        return min(self.end, self.start + self.increment * (step // self.interval))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def constant(cls, value: int) -> Curriculum:
        """A curriculum that stays at ``value``."""
        check_positive_int("value", value)
        return cls(value, value)


def fit(
    model: torch.nn.Module,
    loss_fn: Callable[[int], torch.Tensor],
    *,
    steps: int,
    lr: float,
    log_every: int = 100,
    desc: str = "",
    progress: bool = True,
    grad_clip: float | None = None,
    on_log: Callable[[int, dict], None] | None = None,
    cosine_decay: bool = False,
    warmup_steps: int = 0,
    generator: torch.Generator | None = None,
    resume: dict | None = None,
    save_state: Callable[[dict], None] | None = None,
    save_every: int = 1000,
) -> dict:
    """Adam on ``loss_fn(step) -> scalar tensor`` for ``steps`` steps; returns the
    training curve.

    ``loss_fn`` draws its own fresh batch for the step (from a generator the caller
    seeded). The curve is ``{"step": [...], "loss": [...]}`` with the mean loss over
    each ``log_every`` steps; ``on_log(step, curve)`` may add columns. ``cosine_decay``
    anneals the learning rate to 0 over the run; ``grad_clip`` clips the gradient norm.

    A run longer than one sitting can be cut and resumed: every ``save_every`` steps
    (a multiple of ``log_every``) ``save_state(state)`` receives the whole state of the
    run (step, weights, optimiser and schedule, the curve so far, and the state of
    ``generator``, the generator ``loss_fn`` draws from), and ``fit(..., resume=state)``
    continues from it. A resumed run ends with the same weights and curve, bit for bit,
    as one that was never cut.
    """
    check_module("model", model)
    if not callable(loss_fn):
        raise TypeError(
            f"loss_fn: expected a callable step -> loss, got {type(loss_fn).__name__}"
        )
    if not isinstance(progress, bool):
        raise TypeError(f"progress: expected a bool, got {type(progress).__name__}")
    check_positive_int("save_every", save_every)  # also where save_state is None
    check_positive_int("steps", steps)
    check_positive_int("log_every", log_every)
    check_positive_int("warmup_steps", warmup_steps, minimum=0)  # 0 (falsy) or not
    lr = check_real("lr", lr, minimum=0.0, strict=True)
    if grad_clip is not None:
        check_real("grad_clip", grad_clip, minimum=0.0, strict=True)
    cosine_decay = check_bool("cosine_decay", cosine_decay)
    for name, hook in (("on_log", on_log), ("save_state", save_state)):
        if hook is not None and not callable(hook):
            raise TypeError(
                f"{name}: expected a callable or None, got {type(hook).__name__}"
            )
    check_optional_instance(
        "generator", generator, torch.Generator, "a torch.Generator"
    )
    check_optional_instance("resume", resume, dict, "a saved state (a dict)")
    if save_state is not None or resume is not None:
        check_positive_int("save_every", save_every)
        if save_every % log_every:
            raise ValueError(
                f"save_every: expected a multiple of log_every = {log_every}, "
                f"got {save_every}"
            )
        if generator is None:
            raise ValueError(
                "generator: expected the generator loss_fn draws from (its state is "
                "part of a resumable run), got None"
            )
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = (
        torch.optim.lr_scheduler.LambdaLR(
            optimiser,
            lambda step: learning_rate_factor(step, steps, warmup_steps, cosine_decay),
        )
        if cosine_decay or warmup_steps
        else None
    )
    curve = {"step": [], "loss": []}
    first = 0
    if resume is not None:
        first = _restore(resume, steps, model, optimiser, schedule, generator)
        curve = {key: list(values) for key, values in resume["curve"].items()}
    # The running sum stays on the loss's device (a GPU is not made to wait at every
    # step); float64 adds the float32 losses exactly as a Python float would.
    running = 0.0
    bar = tqdm(
        range(first, steps),
        desc=desc,
        disable=not progress,
        mininterval=2.0,
        initial=first,
        total=steps,
    )
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
        running = running + loss.detach().double()
        if (step + 1) % log_every == 0:
            mean = running.item() / log_every
            if not math.isfinite(mean):  # a diverged run: its weights are lost
                raise ValueError(
                    f"loss_fn: expected a finite training loss, got {mean} by step "
                    f"{step + 1} (the run diverged: lower lr or set grad_clip)"
                )
            curve["step"].append(step + 1)
            curve["loss"].append(mean)
            if on_log is not None:
                on_log(step, curve)
            bar.set_postfix(loss=f"{mean:.4f}")
            running = 0.0
        if save_state is not None and (step + 1) % save_every == 0 and step + 1 < steps:
            save_state(
                {
                    "step": step + 1,
                    "steps": steps,
                    "model": model.state_dict(),
                    "optimiser": optimiser.state_dict(),
                    "schedule": schedule.state_dict() if schedule is not None else None,
                    "curve": curve,
                    "generator": generator.get_state(),
                }
            )
    model.eval()
    return curve


def _restore(state, steps, model, optimiser, schedule, generator) -> int:
    """Load a state written by :func:`fit`'s ``save_state`` into a fresh run; returns
    the step to continue from."""
    if not isinstance(state, dict) or "step" not in state:
        raise TypeError(
            "resume: expected a state dict written by fit's save_state, got "
            f"{type(state).__name__}"
        )
    if state["steps"] != steps:
        raise ValueError(
            f"resume: the saved run has {state['steps']} steps, this one {steps}; a "
            "run's schedule depends on its length, so it resumes only with the same"
        )
    if (state["schedule"] is None) != (schedule is None):
        raise ValueError(
            "resume: the saved run and this one differ in warm-up or decay"
        )
    model.load_state_dict(state["model"])
    optimiser.load_state_dict(state["optimiser"])
    if schedule is not None:
        schedule.load_state_dict(state["schedule"])
    # the generator draws on the CPU, wherever the state was loaded to
    generator.set_state(state["generator"].cpu())
    return int(state["step"])


def learning_rate_factor(
    step: int, steps: int, warmup_steps: int = 0, cosine_decay: bool = False
) -> float:
    """The learning rate at ``step`` (0-based) of a ``steps``-step run, as a fraction
    of its peak.

    A linear warm-up ``(step + 1) / warmup_steps`` for the first ``warmup_steps``
    steps, then ``1`` or, with ``cosine_decay``, a half cosine from 1 to 0 over the
    remaining steps (with no warm-up, PyTorch's ``CosineAnnealingLR``).
    """
    # a scheduler asks once more after the last step, hence step <= steps
    check_positive_int("step", step, minimum=0)
    check_positive_int("steps", steps)
    if step > steps:
        raise ValueError(
            f"step: expected a step of the run, at most {steps}, got {step}"
        )
    check_positive_int("warmup_steps", warmup_steps, minimum=0)
    cosine_decay = check_bool("cosine_decay", cosine_decay)
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if not cosine_decay:
        return 1.0
    return 0.5 * (
        1.0 + math.cos(math.pi * (step - warmup_steps) / (steps - warmup_steps))
    )


def fit_on_prompts(
    model: torch.nn.Module,
    sampler: Callable[[int, torch.Generator], PromptBatch],
    loss: Callable[[torch.nn.Module, PromptBatch], torch.Tensor],
    *,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int = 0,
    **options,
) -> dict:
    """Train ``model`` with :func:`fit` on fresh prompts
    ``sampler(batch_size, generator)``.

    Every step draws ``batch_size`` prompts from one generator seeded with ``seed`` and
    takes ``loss(model, batch)`` (e.g. :func:`icl_lib.training.losses.query_half_mse`);
    the batch is moved to the model's device and dtype. ``options`` go to :func:`fit`
    (``log_every``, ``grad_clip``, ``on_log``, ``progress``, ``desc``,
    ``cosine_decay``, ``warmup_steps``). Returns the curve.
    """
    check_module("model", model)
    if not callable(sampler):
        raise TypeError(
            "sampler: expected a callable (batch_size, generator) -> PromptBatch, "
            f"got {type(sampler).__name__}"
        )
    if not callable(loss):
        raise TypeError(
            "loss: expected a callable (model, batch) -> tensor, got "
            f"{type(loss).__name__}"
        )
    check_positive_int("batch_size", batch_size)
    gen = make_generator(seed)
    param = next(model.parameters())

    def loss_fn(step):
        batch = sampler(batch_size, gen).to(device=param.device, dtype=param.dtype)
        return loss(model, batch)

    options.setdefault("progress", False)
    return fit(model, loss_fn, steps=steps, lr=lr, **options)


def resampler(batch: PromptBatch) -> Callable[[int, torch.Generator], PromptBatch]:
    """A sampler that draws prompts (with replacement) from one fixed ``batch``: a
    training set."""
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")

    def sample(batch_size: int, gen: torch.Generator) -> PromptBatch:
        return batch.select(
            torch.randint(batch.batch_size, (batch_size,), generator=gen)
        )

    return sample
