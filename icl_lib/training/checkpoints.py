"""Checkpoints: the weights (safetensors) and one manifest layout for every model kind.

``data/<name>.safetensors`` holds the weights, ``data/<name>.json`` the manifest with
the keys :data:`MANIFEST_KEYS`: the preset that made it, seed, steps, training curve,
metrics, parameter count, environment, the parent checkpoint's hash for a warm start,
the sha256 of the weights, and ``manifest_sha256``, the sha256 of every other field
(the weights' hash included): one hash that covers the weights and every number a
chapter reads from the manifest. Loading checks both hashes, the preset and every
field that repeats it, the weights' file name, dtypes and parameter count, and that
the weights are finite (a manifest rewritten through :func:`write_manifest` passes its
hash); a malformed manifest, a lone half of a pair or a damaged file is refused with an
error that names the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .._checks import check_module
from ..runtime import DATA_DIR

MANIFEST_KEYS = (
    "name",  # the preset's name, the file stem
    "chapter",  # the chapter that uses it
    "description",  # what it is for
    "preset",  # the whole preset (Preset.to_dict()): model, task, loss, optimiser
    "seed",  # initialisation and every training prompt
    "steps",  # optimiser steps
    "init_from",  # None, or {"preset", "sha256"} of a warm start's parent checkpoint
    "curve",  # training curve: {"step", "loss", ...} (mean loss per log_every steps)
    "metrics",  # final training loss and the evaluation on fresh prompts
    "n_params",  # trainable parameters
    "wall_seconds",  # training time
    "environment",  # torch, python, device, threads (None where not recorded)
    "weights",  # the weights' file name
    "sha256",  # of the weights' file
    "manifest_sha256",  # of every field above, as canonical JSON (manifest_digest)
)


def sha256(path: Path) -> str:
    """The sha256 of a file, hex."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a file path, got {type(path).__name__}")
    if not Path(path).is_file():
        raise FileNotFoundError(f"path: expected an existing file, got {path}")
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def checkpoint_paths(name: str, data_dir=None) -> tuple[Path, Path]:
    """``(weights, manifest)`` paths of the checkpoint ``name`` (under ``data/`` by
    default)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty preset name, got {name!r}")
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(
            f"data_dir: expected a folder path, got {type(data_dir).__name__}"
        )
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    return folder / f"{name}.safetensors", folder / f"{name}.json"


def manifest_digest(manifest: dict) -> str:
    """The sha256 of every manifest field but ``manifest_sha256``, as canonical JSON
    (sorted keys): what ``manifest_sha256`` records."""
    _check_manifest(manifest)
    fields = {key: manifest[key] for key in MANIFEST_KEYS[:-1]}
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _check_manifest(manifest) -> None:
    """A manifest: a dict with every key of :data:`MANIFEST_KEYS` (``manifest_sha256``
    may be left out: it is computed) and no other."""
    if not isinstance(manifest, dict):
        raise TypeError(f"manifest: expected a dict, got {type(manifest).__name__}")
    missing = [key for key in MANIFEST_KEYS[:-1] if key not in manifest]
    extra = [key for key in manifest if key not in MANIFEST_KEYS]
    if missing or extra:
        raise ValueError(
            f"manifest: expected the keys {MANIFEST_KEYS}, missing {missing}, extra "
            f"{extra}"
        )


def write_manifest(manifest: dict, data_dir=None) -> Path:
    """Write ``manifest`` (every key of :data:`MANIFEST_KEYS` but the last, which is
    computed here) as JSON."""
    _check_manifest(manifest)
    _, meta = checkpoint_paths(manifest["name"], data_dir)
    ordered = {key: manifest[key] for key in MANIFEST_KEYS[:-1]}
    ordered["manifest_sha256"] = manifest_digest(ordered)
    meta.write_text(json.dumps(ordered, indent=1) + "\n")
    return meta


def save_checkpoint(model: torch.nn.Module, manifest: dict, data_dir=None) -> Path:
    """Write the weights and the manifest (``weights``, ``sha256`` and
    ``manifest_sha256`` filled in); returns the weights' path."""
    check_module("model", model)
    _check_manifest(manifest)
    weights, _ = checkpoint_paths(manifest["name"], data_dir)
    weights.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(weights))
    write_manifest(
        dict(manifest, weights=weights.name, sha256=sha256(weights)), data_dir
    )
    return weights


def checkpoint_state(name: str, data_dir=None) -> str:
    """``"present"`` (both files), ``"missing"`` (neither) or ``"partial"`` (one of
    the pair: a damaged checkpoint, never silently replaced)."""
    found = [path.exists() for path in checkpoint_paths(name, data_dir)]
    return "present" if all(found) else "partial" if any(found) else "missing"


def read_manifest(name: str, data_dir=None) -> dict:
    """The manifest of checkpoint ``name``, checked for its layout.

    ``FileNotFoundError`` if either file is missing (naming the survivor of a
    pair), ``ValueError`` naming the file if it is not a manifest."""
    weights, meta = checkpoint_paths(name, data_dir)
    state = checkpoint_state(name, data_dir)
    if state == "missing":
        raise FileNotFoundError(
            f"name: no checkpoint {weights} (+ .json); train it with `make train "
            f"PRESET={name}`"
        )
    if state == "partial":
        lost, kept = (meta, weights) if weights.exists() else (weights, meta)
        raise FileNotFoundError(
            f"name: checkpoint {name!r} is half there: {lost} is missing, {kept} is "
            f"not; restore it (`git checkout -- {lost.parent.name}/`) or retrain with "
            f"`make train PRESET={name}`"
        )
    try:
        manifest = json.loads(meta.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{meta}: not a JSON manifest ({error})") from error
    if not isinstance(manifest, dict):
        raise ValueError(
            f"{meta}: expected a JSON object with the keys {MANIFEST_KEYS}, got a "
            f"JSON {type(manifest).__name__}"
        )
    missing = [key for key in MANIFEST_KEYS if key not in manifest]
    extra = [key for key in manifest if key not in MANIFEST_KEYS]
    if missing or extra:
        raise ValueError(
            f"{meta}: expected the keys {MANIFEST_KEYS}, missing {missing}, extra "
            f"{extra}"
        )
    return manifest


def _init_matches(init, parent) -> bool:
    """Whether a manifest's ``init_from`` records the preset's parent: None for a
    fresh start (``parent`` empty), else ``{"preset": parent, "sha256": hex}``."""
    if not parent:
        return init is None
    return (
        isinstance(init, dict)
        and init.keys() == {"preset", "sha256"}
        and init["preset"] == parent
        and isinstance(init["sha256"], str)
    )


def load_weights(
    model: torch.nn.Module, name: str, expected_preset: dict, data_dir=None
) -> dict:
    """Load checkpoint ``name`` into ``model`` after checking its two hashes, its
    preset and that every weight is finite.

    ``expected_preset`` is the preset's ``to_dict()``. Weights that do not match the
    manifest's ``sha256``, a manifest edited since it was written (``manifest_sha256``),
    a manifest written by another preset or whose ``name``, ``chapter``,
    ``description``, ``seed``, ``steps`` or ``init_from`` disagree with it, a
    ``weights`` entry naming another file, weights that are not a safetensors file,
    whose dtype is not the model's (a float16 file would be cast up silently), that do
    not fit the model or its ``n_params``, or that are not finite raise ``ValueError``
    naming the file. Returns the manifest.
    """
    manifest = read_manifest(name, data_dir)
    weights, meta = checkpoint_paths(name, data_dir)
    retrain = f"retrain with `make train PRESET={name}`"
    if manifest["sha256"] != sha256(weights):
        raise ValueError(f"{weights}: sha256 differs from its manifest; {retrain}")
    if manifest["manifest_sha256"] != manifest_digest(manifest):
        raise ValueError(
            f"{meta}: its fields were edited after it was written (manifest_sha256 "
            f"differs); restore it with git or {retrain}"
        )
    expected = json.loads(json.dumps(expected_preset))
    if manifest["preset"] != expected:
        raise ValueError(
            f"{meta}: its preset differs from the registry's {name!r}; {retrain}"
        )
    # the fields that repeat the preset's (a chapter reads them) must be the preset's
    for key in ("name", "chapter", "description", "seed", "steps"):
        if manifest[key] != expected.get(key):
            raise ValueError(
                f"{meta}: its {key} {manifest[key]!r} differs from the preset's "
                f"{expected.get(key)!r}; {retrain}"
            )
    parent, init = expected.get("init_from"), manifest["init_from"]
    if not _init_matches(init, parent):
        raise ValueError(
            f"{meta}: its init_from {init!r} differs from the preset's parent "
            f"{parent!r} (None, or {{'preset', 'sha256'}}); {retrain}"
        )
    if manifest["weights"] != weights.name:
        raise ValueError(
            f"{meta}: its weights are {manifest['weights']!r}, not {weights.name!r}; "
            f"{retrain}"
        )
    try:
        state = load_file(str(weights))
    except SafetensorError as error:
        raise ValueError(
            f"{weights}: not a safetensors file ({error}); {retrain}"
        ) from error
    own = model.state_dict()
    for key, value in state.items():
        if key in own and value.dtype != own[key].dtype:
            raise ValueError(
                f"{weights}: weight {key!r} is {value.dtype}, the model's is "
                f"{own[key].dtype} (loading would cast it silently); {retrain}"
            )
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise ValueError(f"{weights}: weight {key!r} is not finite; {retrain}")
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        raise ValueError(
            f"{weights}: the weights do not fit the preset's model ({error}); {retrain}"
        ) from error
    n_params = sum(p.numel() for p in model.parameters())
    if manifest["n_params"] != n_params:
        raise ValueError(
            f"{meta}: its n_params {manifest['n_params']!r} differs from the model's "
            f"{n_params}; {retrain}"
        )
    return manifest
