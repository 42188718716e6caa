"""The registry of every training preset of the book, and the checkpoints they make.

Each chapter's presets sit in one file (``overview``, ``gd``, ``stability``, ``bayes``,
``selection``, ``mechanistic``, ``implicit``, ``kernel``); :data:`PRESETS` holds them
all by name.
:func:`load_or_train` is what a chapter calls: the committed checkpoint
``data/<name>.safetensors`` (its hash and preset checked
against the manifest), or a training run that writes it. ``make train`` lists every
preset, and ``make train PRESET=name`` retrains one (``python -m icl_lib.presets``).

Adding a model kind takes a model file in :mod:`icl_lib.models` (a config with ``build``
and ``to_dict``, a model with ``predict``) and a preset entry here.
"""

from __future__ import annotations

import sys

import torch

from ..runtime import get_device
from ..training.checkpoints import (
    checkpoint_paths,
    checkpoint_state,
    load_weights,
    save_checkpoint,
    sha256,
)
from ..training.preset import Preset, train_preset
from . import (
    bayes,
    frontiers,
    gd,
    implicit,
    kernel,
    mechanistic,
    overview,
    selection,
    stability,
)

CHAPTERS = (
    overview,
    gd,
    stability,
    bayes,
    selection,
    mechanistic,
    implicit,
    kernel,
    frontiers,
)
PRESETS: dict[str, Preset] = {
    preset.name: preset for module in CHAPTERS for preset in module.PRESETS
}


def get_preset(name: str) -> Preset:
    """The preset called ``name`` (see :data:`PRESETS`)."""
    if name not in PRESETS:
        raise ValueError(f"name: expected one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]


def load_checkpoint(name: str, data_dir=None) -> tuple[torch.nn.Module, dict]:
    """The committed checkpoint of preset ``name``: ``(model in eval mode, manifest)``.

    Raises ``FileNotFoundError`` if it is missing and ``ValueError`` if the weights or
    the preset disagree with the manifest.
    """
    preset = get_preset(name)
    model = preset.build()
    manifest = load_weights(model, name, preset.to_dict(), data_dir)
    return model.eval(), manifest


def train(name: str, *, data_dir=None, device=None, progress: bool = True):
    """Train preset ``name`` from its seed and write its checkpoint; returns
    ``(model, manifest)``."""
    preset = get_preset(name)
    init = None
    if preset.init_from:  # warm start from another preset's committed checkpoint
        parent, _ = load_checkpoint(preset.init_from, data_dir)
        init = (parent, sha256(checkpoint_paths(preset.init_from, data_dir)[0]))
    device = device if device is not None else get_device()
    model, manifest = train_preset(preset, init=init, device=device, progress=progress)
    save_checkpoint(model, manifest, data_dir)
    return load_checkpoint(name, data_dir)


def load_or_train(
    name: str, *, retrain: bool = False, data_dir=None, progress: bool = False
):
    """The checkpoint of preset ``name`` if committed (and not ``retrain``), else train
    it.

    Returns ``(model, manifest)``. Training says so (on stderr: the preset, its steps,
    where it writes) and writes ``data/<name>.safetensors`` and its manifest. Half a
    checkpoint (one of the two files) is an error, never overwritten unless
    ``retrain``: restore the missing file or retrain on purpose.
    """
    preset = get_preset(name)
    if not retrain and checkpoint_state(name, data_dir) != "missing":
        return load_checkpoint(name, data_dir)  # a partial pair raises, by name
    weights, _ = checkpoint_paths(name, data_dir)
    reason = "retrain=True" if retrain else "no checkpoint"
    print(
        f"load_or_train: {reason}; training preset {name!r} ({preset.steps} steps, "
        f"batch {preset.batch_size}) and writing {weights} (+ .json)",
        file=sys.stderr,
    )
    return train(name, data_dir=data_dir, progress=progress)
