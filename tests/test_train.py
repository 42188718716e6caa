"""Training presets, determinism, and the committed checkpoints with their manifests."""

import dataclasses
import hashlib
import json

import pytest
import torch

from icl_lib.paths import DATA_DIR
from icl_lib.train import PRESETS, Curriculum, TrainConfig, checkpoint_paths, get_preset, load_checkpoint, load_or_train, train

TINY = dataclasses.replace(
    PRESETS["overview_noiseless"], name="unit_tiny", steps=6, log_every=3, eval_size=16,
    model=dataclasses.replace(PRESETS["overview_noiseless"].model, n_layer=1, n_embd=16),
)


def test_curriculum():
    c = Curriculum(11, 21, increment=2, interval=500)
    assert [c.value(s) for s in (0, 499, 500, 2499, 2500, 10**6)] == [11, 11, 13, 19, 21, 21]
    assert Curriculum.constant(5).value(10**6) == 5
    with pytest.raises(ValueError, match="end: expected at least start = 5"):
        Curriculum(5, 3)


def test_training_is_deterministic():
    a, man_a = train(TINY, progress=False)
    b, man_b = train(TINY, progress=False)
    assert man_a["curve"] == man_b["curve"]
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
    assert man_a["curve"]["step"] == [3, 6] and man_a["curve"]["points"] == [TINY.points.value(2), TINY.points.value(5)]


def test_load_or_train_writes_a_consistent_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setitem(PRESETS, TINY.name, TINY)
    model, manifest = load_or_train(TINY.name, data_dir=tmp_path, progress=False)
    weights, meta = checkpoint_paths(TINY.name, tmp_path)
    assert manifest["sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    again, _ = load_checkpoint(TINY.name, tmp_path)
    assert all(torch.equal(p, q) for p, q in zip(model.state_dict().values(), again.state_dict().values()))
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x00")  # corrupt one byte
    with pytest.raises(ValueError, match="sha256 differs"):
        load_checkpoint(TINY.name, tmp_path)


def test_a_changed_preset_is_detected(tmp_path, monkeypatch):
    monkeypatch.setitem(PRESETS, TINY.name, TINY)
    load_or_train(TINY.name, data_dir=tmp_path, progress=False)
    monkeypatch.setitem(PRESETS, TINY.name, dataclasses.replace(TINY, lr=0.5))
    with pytest.raises(ValueError, match="config differs from the preset"):
        load_checkpoint(TINY.name, tmp_path)


COMMITTED = sorted(p.stem for p in DATA_DIR.glob("*.safetensors"))


@pytest.mark.parametrize("name", COMMITTED)
def test_every_committed_checkpoint_has_a_manifest_with_its_hash(name):
    manifest = json.loads((DATA_DIR / f"{name}.json").read_text())
    digest = hashlib.sha256((DATA_DIR / f"{name}.safetensors").read_bytes()).hexdigest()
    assert manifest["sha256"] == digest
    assert {"config", "seed", "steps", "metrics", "curve"} <= set(manifest)


@pytest.mark.parametrize("name", [n for n in COMMITTED if n in PRESETS])
def test_committed_checkpoint_matches_manifest_and_preset(name):
    config = get_preset(name)
    manifest = json.loads((DATA_DIR / f"{name}.json").read_text())
    assert manifest["steps"] == config.steps and manifest["seed"] == config.seed
    assert len(manifest["curve"]["step"]) == config.steps // config.log_every
    assert len(manifest["metrics"]["eval_error_by_k"]) == config.model.n_positions
    model, _ = load_checkpoint(name)  # checks the sha256 and the config
    assert model.n_params() == manifest["n_params"]
    if config.init_from:  # a warm start names the exact checkpoint it continued from
        parent = json.loads((DATA_DIR / f"{config.init_from}.json").read_text())
        assert manifest["init_from"] == {"preset": config.init_from, "sha256": parent["sha256"]}
    else:
        assert manifest["init_from"] is None


def test_every_committed_checkpoint_has_a_training_command():
    from icl_lib.train import _other_trainers

    assert set(COMMITTED) <= set(PRESETS) | set(_other_trainers())


def test_the_chapter_checkpoints_are_committed():
    assert {"overview_noiseless", "overview_noisy"} <= set(COMMITTED)


def test_warm_start_continues_from_the_parent(tmp_path, monkeypatch):
    monkeypatch.setitem(PRESETS, TINY.name, TINY)
    parent, _ = load_or_train(TINY.name, data_dir=tmp_path, progress=False)
    child_cfg = dataclasses.replace(TINY, name="unit_child", steps=3, lr=1e-12, init_from=TINY.name)
    monkeypatch.setitem(PRESETS, child_cfg.name, child_cfg)
    child, manifest = load_or_train(child_cfg.name, data_dir=tmp_path, progress=False)
    assert manifest["init_from"]["preset"] == TINY.name
    # with a negligible learning rate the child keeps the parent's weights
    for p, q in zip(parent.state_dict().values(), child.state_dict().values()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)


def test_bad_preset_and_config():
    with pytest.raises(ValueError, match="name: expected one of"):
        get_preset("nope")
    with pytest.raises(ValueError, match="dims: expected the curriculum to end at model.n_dims"):
        TrainConfig(name="x", model=TINY.model, dims=Curriculum.constant(3), points=TINY.points)
