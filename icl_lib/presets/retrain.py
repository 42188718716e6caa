"""Retrain every stale checkpoint in dependency order, a few at a time.

A book preset's checkpoint is *current* when its manifest's preset equals the registry's
and, for a warm start, the parent hash in its manifest equals the sha256 of the parent's
committed weights; otherwise it is *stale* (or missing). :func:`stale` says which and
why; :func:`retrain_stale` retrains them, each in its own process with one thread (so
that a run's weights do not depend on the machine), a child only after its parent has
been retrained. Paper presets (``Preset.paper``) are never retrained here.

    python -m icl_lib.presets --stale --dry-run   # what would run, and why
    python -m icl_lib.presets --stale --jobs 2    # run it (``make retrain``)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .._checks import check_positive_int, check_sequence
from ..training.checkpoints import checkpoint_paths, read_manifest, sha256
from . import PRESETS


def staleness(name: str, data_dir=None) -> str | None:
    """Why the checkpoint of book preset ``name`` must be retrained, or ``None`` if it
    is current."""
    if name not in PRESETS:
        raise ValueError(f"name: expected one of {sorted(PRESETS)}, got {name!r}")
    preset = PRESETS[name]
    try:
        manifest = read_manifest(name, data_dir)
    except FileNotFoundError:
        return "no checkpoint"
    import json

    if manifest["preset"] != json.loads(json.dumps(preset.to_dict())):
        return "preset changed"
    if manifest.get("sha256") != sha256(checkpoint_paths(name, data_dir)[0]):
        return "weights differ from the manifest"
    if preset.init_from:
        parent_weights = checkpoint_paths(preset.init_from, data_dir)[0]
        if not parent_weights.exists():
            return f"parent {preset.init_from} missing"
        if (manifest.get("init_from") or {}).get("sha256") != sha256(parent_weights):
            return f"parent {preset.init_from} retrained"
    return None


def stale(data_dir=None) -> dict[str, str]:
    """Every book preset that must be retrained, with the reason, in dependency order
    (a stale parent makes all its descendants stale)."""
    out: dict[str, str] = {}
    for name in dependency_order():
        preset = PRESETS[name]
        if preset.paper:
            continue
        if preset.init_from in out:
            out[name] = f"parent {preset.init_from} is stale"
            continue
        reason = staleness(name, data_dir)
        if reason is not None:
            out[name] = reason
    return out


def dependency_order() -> list[str]:
    """Every preset name, each after the preset it warm-starts from."""
    order: list[str] = []

    def visit(name: str, path: tuple) -> None:
        if name in order:
            return
        if name in path:
            raise ValueError(f"init_from: a cycle of warm starts {path + (name,)}")
        parent = PRESETS[name].init_from
        if parent:
            visit(parent, path + (name,))
        order.append(name)

    for name in sorted(PRESETS):
        visit(name, ())
    return order


def _descendants(name: str) -> set[str]:
    children = {n for n, p in PRESETS.items() if p.init_from == name}
    return children.union(*(_descendants(child) for child in children))


def retrain_stale(
    jobs: int = 2,
    data_dir=None,
    log_dir="_build/train_logs",
    dry_run=False,
    exclude=(),
) -> list[str]:
    """Retrain :func:`stale` presets, at most ``jobs`` processes at once; returns the
    names retrained. Each run's output goes to ``log_dir/<name>.log``; a failed run
    stops its descendants and raises at the end. ``exclude``: names to leave for now
    (e.g. one being trained by another process), with their descendants."""
    check_positive_int("jobs", jobs)
    if not isinstance(log_dir, (str, os.PathLike)):
        raise TypeError(
            f"log_dir: expected a folder path, got {type(log_dir).__name__}"
        )
    if not isinstance(dry_run, bool):
        raise TypeError(f"dry_run: expected a bool, got {type(dry_run).__name__}")
    check_sequence("exclude", exclude, "a sequence of preset names")
    unknown = [name for name in exclude if name not in PRESETS]
    if unknown:
        raise ValueError(f"exclude: expected preset names, got {unknown}")
    todo = stale(data_dir)
    left = set(exclude).union(*(_descendants(name) for name in exclude))
    todo = {name: reason for name, reason in todo.items() if name not in left}
    for name, reason in todo.items():
        print(f"{name:32s} {reason}")
    if not todo:
        print("nothing is stale: every book checkpoint matches its preset and parent")
    if dry_run or not todo:
        return []
    logs = Path(log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    # Parents of many checkpoints first: they are the critical path.
    descendants = {name: len(_descendants(name)) for name in todo}
    pending = sorted(todo, key=lambda name: -descendants[name])
    running, done, failed = {}, [], []
    extra = ["--data-dir", str(data_dir)] if data_dir is not None else []
    while pending or running:
        for name in list(pending):
            parent = PRESETS[name].init_from
            if parent in failed:
                pending.remove(name)
                failed.append(name)
            elif (
                len(running) < jobs and parent not in pending and parent not in running
            ):
                log = open(logs / f"{name}.log", "w")  # noqa: SIM115 (closed below)
                # --force: a stale checkpoint is replaced on purpose; no stdin, so a
                # child never waits on a question
                command = [
                    sys.executable,
                    "-m",
                    "icl_lib.presets",
                    name,
                    "--force",
                    *extra,
                ]
                running[name] = (
                    subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                    ),
                    log,
                )
                pending.remove(name)
                print(f"started {name}", flush=True)
        time.sleep(2)
        for name, (process, log) in list(running.items()):
            if process.poll() is None:
                continue
            log.close()
            del running[name]
            (done if process.returncode == 0 else failed).append(name)
            print(
                f"{'finished' if process.returncode == 0 else 'FAILED'} {name}",
                flush=True,
            )
    if failed:
        raise RuntimeError(f"retraining failed: {failed} (logs in {logs})")
    return done
