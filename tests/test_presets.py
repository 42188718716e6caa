"""The preset registry, one manifest layout, and every committed checkpoint."""

import copy
import dataclasses
import json
from pathlib import Path

import pytest
import torch

from icl_lib import runtime
from icl_lib.analysis.curves import error_curve
from icl_lib.models.contextual import RegressionBlockConfig
from icl_lib.models.gpt import TransformerConfig
from icl_lib.models.token_gpt import TokenTransformerConfig
from icl_lib.presets import PRESETS, get_preset, load_checkpoint, load_or_train
from icl_lib.presets.__main__ import main as train_command
from icl_lib.runtime import DATA_DIR
from icl_lib.tasks import TokenBatch
from icl_lib.training.checkpoints import (
    MANIFEST_KEYS,
    checkpoint_paths,
    manifest_digest,
    save_checkpoint,
    sha256,
)
from icl_lib.training.loop import Curriculum, fit
from icl_lib.training.preset import Preset, train_preset
from icl_lib.training.recipe import follows_recipe, recipe
from icl_lib.training.samplers import RegressionPrompts

COMMITTED = sorted(p.stem for p in DATA_DIR.glob("*.safetensors"))
SMALLER = {
    TransformerConfig: {"n_layer": 1, "n_embd": 16, "n_head": 2},
    RegressionBlockConfig: {"width": 8, "hidden": 8},
    TokenTransformerConfig: {"n_layer": 1, "n_embd": 16, "n_head": 2},
}


def tiny(preset: Preset, name: str = "") -> Preset:
    """A two-step copy of ``preset`` with a small model: the same code path, in a
    second."""
    model = dataclasses.replace(preset.model, **SMALLER.get(type(preset.model), {}))
    return dataclasses.replace(
        preset,
        name=name or f"tiny_{preset.name}",
        model=model,
        steps=2,
        batch_size=4,
        log_every=1,
        eval_size=8,
        init_from="",
    )


def test_curriculum():
    c = Curriculum(11, 21, increment=2, interval=500)
    assert [c.value(s) for s in (0, 499, 500, 2499, 2500, 10**6)] == [
        11,
        11,
        13,
        19,
        21,
        21,
    ]
    assert Curriculum.constant(5).value(10**6) == 5
    with pytest.raises(ValueError, match="end: expected at least start = 5"):
        Curriculum(5, 3)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_trains_saves_and_loads_on_a_tiny_copy(
    name, tmp_path, monkeypatch
):
    preset = tiny(get_preset(name))
    monkeypatch.setitem(PRESETS, preset.name, preset)
    model, manifest = load_or_train(preset.name, data_dir=tmp_path)
    assert tuple(manifest) == MANIFEST_KEYS
    assert manifest["preset"] == json.loads(json.dumps(preset.to_dict()))
    assert manifest["curve"]["step"] == [1, 2] and manifest["steps"] == 2
    assert manifest["sha256"] == sha256(checkpoint_paths(preset.name, tmp_path)[0])
    again, _ = load_checkpoint(preset.name, tmp_path)
    for p, q in zip(
        model.state_dict().values(), again.state_dict().values(), strict=True
    ):
        assert torch.equal(p, q)
    batch = preset.task.eval_batch(3, 0)
    if isinstance(batch, TokenBatch):  # a language model answers next-token logits
        T, V = model.config.n_ctx, model.config.vocab_size
        assert model(batch.tokens[:, :T]).shape == (3, min(T, batch.n_points), V)
        return
    xs, ys, xq, _ = batch.prompt(2)
    assert model.predict(xs, ys, xq).shape == (3,)  # every model answers predict


def test_training_is_deterministic():
    preset = tiny(get_preset("overview_noiseless"))
    a, man_a = train_preset(preset, progress=False)
    b, man_b = train_preset(preset, progress=False)
    assert man_a["curve"] == man_b["curve"] and man_a["metrics"] == man_b["metrics"]
    assert all(
        torch.equal(p, q)
        for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )
    assert man_a["curve"]["points"] == [
        preset.task.points.value(0),
        preset.task.points.value(1),
    ]


def test_a_changed_preset_or_corrupt_weights_are_refused(tmp_path, monkeypatch):
    preset = tiny(get_preset("gd_looped2"))
    monkeypatch.setitem(PRESETS, preset.name, preset)
    load_or_train(preset.name, data_dir=tmp_path)
    monkeypatch.setitem(PRESETS, preset.name, dataclasses.replace(preset, lr=0.5))
    with pytest.raises(ValueError, match="preset differs"):
        load_checkpoint(preset.name, tmp_path)
    monkeypatch.setitem(PRESETS, preset.name, preset)
    weights, _ = checkpoint_paths(preset.name, tmp_path)
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x00")  # corrupt one byte
    with pytest.raises(ValueError, match="sha256 differs"):
        load_checkpoint(preset.name, tmp_path)
    with pytest.raises(FileNotFoundError, match="make train PRESET=garg_standard"):
        load_checkpoint("garg_standard", tmp_path)


@pytest.fixture
def tiny_checkpoint(tmp_path, monkeypatch):
    """A trained two-step checkpoint under tmp_path: ``(name, weights, manifest)``."""
    preset = tiny(get_preset("gd_looped2"))
    monkeypatch.setitem(PRESETS, preset.name, preset)
    load_or_train(preset.name, data_dir=tmp_path)
    return (preset.name, *checkpoint_paths(preset.name, tmp_path))


@pytest.mark.parametrize(
    "field, value",
    [
        ("steps", 10**6),
        ("name", "other"),
        ("metrics", {"eval_error_by_k": [0.0]}),
        ("curve", {"step": [1], "loss": [0.0]}),
        ("wall_seconds", 1.0),
    ],
)
def test_an_edited_manifest_is_refused(tiny_checkpoint, tmp_path, field, value):
    """manifest_sha256 covers every field a chapter reads, not only the weights."""
    name, _, meta = tiny_checkpoint
    manifest = json.loads(meta.read_text())
    assert manifest["manifest_sha256"] == manifest_digest(manifest)
    meta.write_text(json.dumps({**manifest, field: value}))
    with pytest.raises(ValueError, match="edited after it was written"):
        load_checkpoint(name, tmp_path)


def test_malformed_manifests_and_weights_are_refused_by_file(tiny_checkpoint, tmp_path):
    name, weights, meta = tiny_checkpoint
    model, manifest = load_checkpoint(name, tmp_path)
    good = meta.read_text()
    for text, match in [
        ("{not json", "not a JSON manifest"),
        ("[1, 2]", "expected a JSON object"),
        (
            json.dumps({k: v for k, v in manifest.items() if k != "sha256"}),
            "missing \\['sha256'\\]",
        ),
        (json.dumps({**manifest, "extra": 1}), "extra \\['extra'\\]"),
    ]:
        meta.write_text(text)
        with pytest.raises(ValueError, match=match) as info:
            load_checkpoint(name, tmp_path)
        assert str(meta) in str(info.value)
    meta.write_text(good)
    # NaN weights with both hashes updated: the hashes agree, the weights do not load
    with torch.no_grad():
        next(model.parameters()).fill_(float("nan"))
    save_checkpoint(model, manifest, tmp_path)
    with pytest.raises(ValueError, match="is not finite") as info:
        load_checkpoint(name, tmp_path)
    assert str(weights) in str(info.value)


def test_half_a_checkpoint_is_never_overwritten(tiny_checkpoint, tmp_path, capsys):
    name, weights, meta = tiny_checkpoint
    kept = weights.read_bytes()
    meta.unlink()
    for call in (load_checkpoint, load_or_train):
        with pytest.raises(FileNotFoundError, match="half there") as info:
            call(name, data_dir=tmp_path)
        assert str(meta) in str(info.value)
    assert weights.read_bytes() == kept and not meta.exists()
    load_or_train(name, data_dir=tmp_path, retrain=True)  # on purpose: it retrains
    assert "retrain=True; training preset" in capsys.readouterr().err
    weights.unlink()
    meta.unlink()
    load_or_train(name, data_dir=tmp_path)  # nothing there: it trains, and says so
    assert "no checkpoint; training preset" in capsys.readouterr().err
    assert meta.exists() and weights.exists()


def test_the_command_does_not_overwrite_without_force(tiny_checkpoint, tmp_path):
    name, weights, _ = tiny_checkpoint
    kept = weights.read_bytes()
    with pytest.raises(SystemExit):  # stdin is not a terminal here: no, unless --force
        train_command([name, "--data-dir", str(tmp_path)])
    assert weights.read_bytes() == kept
    train_command([name, "--data-dir", str(tmp_path), "--force"])
    assert load_checkpoint(name, tmp_path)[1]["name"] == name


def test_the_data_folder_is_never_inside_site_packages(tmp_path, monkeypatch):
    assert DATA_DIR == Path(runtime.__file__).resolve().parents[1] / "data"  # a clone
    site = tmp_path / "site-packages"  # a non-editable install: no data/ beside icl_lib
    (site / "icl_lib").mkdir(parents=True)
    book = tmp_path / "book"
    (book / "data").mkdir(parents=True)
    (book / "_config.yml").write_text("title: x\n")
    (book / "chapters").mkdir()
    monkeypatch.setattr(runtime, "REPO_ROOT", site)
    monkeypatch.delenv(runtime.DATA_ENV, raising=False)
    monkeypatch.chdir(book / "chapters")
    assert runtime.find_data_dir() == book / "data"
    monkeypatch.chdir(tmp_path)
    assert runtime.find_data_dir() == tmp_path / "data"
    monkeypatch.setenv(runtime.DATA_ENV, str(tmp_path / "mine"))
    assert runtime.find_data_dir() == tmp_path / "mine"


def _rewritten(meta: Path, **fields) -> None:
    """The manifest with ``fields`` changed and its ``manifest_sha256`` recomputed, as
    any script that edits a manifest through write_manifest writes it."""
    manifest = {**json.loads(meta.read_text()), **fields}
    manifest["manifest_sha256"] = manifest_digest(manifest)
    meta.write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "field, value",
    [
        ("steps", 10**6),
        ("name", "other"),
        ("seed", 1),
        ("chapter", "01_overview"),
        ("description", "another run"),
        ("init_from", {"preset": "overview_noisy", "sha256": "0" * 64}),
        ("weights", "overview_noiseless.safetensors"),
        ("n_params", 1),
    ],
)
def test_a_rehashed_manifest_that_disagrees_with_its_preset_is_refused(
    tiny_checkpoint, tmp_path, field, value
):
    """Issue 42: with manifest_sha256 recomputed, the fields that repeat the preset,
    the weights' file name and the parameter count are checked against the preset,
    the file and the model, by name; load_or_train loads through the same check."""
    name, _, meta = tiny_checkpoint
    _rewritten(meta, **{field: value})
    for load in (load_checkpoint, load_or_train):
        with pytest.raises(ValueError, match=f"its {field} .*differs|its {field} are"):
            load(name, data_dir=tmp_path)


def test_weights_of_another_dtype_or_a_damaged_header_are_refused_by_file(
    tiny_checkpoint, tmp_path
):
    """Issue 42: float16 weights were cast up silently, and a flipped header byte
    gave safetensors' own error without the file's name."""
    from safetensors.torch import load_file, save_file

    name, weights, meta = tiny_checkpoint
    good = weights.read_bytes()
    half = {k: v.half() for k, v in load_file(str(weights)).items()}
    save_file(half, str(weights))
    _rewritten(meta, sha256=sha256(weights))
    with pytest.raises(ValueError, match="is torch.float16, the model's is") as info:
        load_checkpoint(name, tmp_path)
    assert str(weights) in str(info.value)
    header = bytearray(good)
    header[10] ^= 0xFF  # inside the JSON header after its 8-byte length
    weights.write_bytes(bytes(header))
    _rewritten(meta, sha256=sha256(weights))
    with pytest.raises(ValueError, match="not a safetensors file") as info:
        load_checkpoint(name, tmp_path)
    assert str(weights) in str(info.value)


def test_a_manifest_has_every_key_before_it_is_hashed_or_saved(tiny_checkpoint):
    from icl_lib.training.preset import loss_change_last_fifth

    name, _, _ = tiny_checkpoint
    model = get_preset(name).build()
    for call in (lambda: manifest_digest({}), lambda: save_checkpoint(model, {})):
        with pytest.raises(ValueError, match="^manifest: expected the keys"):
            call()
    with pytest.raises(ValueError, match="^curve: expected a manifest curve"):
        loss_change_last_fifth({})
    assert loss_change_last_fifth({"step": [], "loss": []}) is None


def test_monitors_and_training_refuse_what_they_cannot_use():
    from icl_lib.presets.retrain import retrain_stale
    from icl_lib.presets.stability import transfer_gap_curves

    sampler = RegressionPrompts(Curriculum.constant(3), Curriculum.constant(6))
    with pytest.raises(TypeError, match="^model: expected a model with parameters"):
        sampler.monitor(torch.nn.Linear(3, 1))
    model = torch.nn.Linear(3, 1)
    with pytest.raises(TypeError, match="^warmup_steps: expected an int"):
        fit(model, lambda step: model.weight.sum(), steps=2, lr=0.1, warmup_steps=None)
    with pytest.raises(TypeError, match="^exclude: expected a sequence"):
        retrain_stale(dry_run=True, exclude=None)
    for sizes in (None, 2.5, []):
        with pytest.raises((TypeError, ValueError), match="^pool_sizes: expected"):
            transfer_gap_curves(sizes)


def test_warm_start_continues_from_the_parent(tmp_path, monkeypatch):
    parent = tiny(get_preset("overview_noiseless"), "unit_parent")
    child = dataclasses.replace(
        parent, name="unit_child", lr=1e-12, init_from=parent.name
    )
    monkeypatch.setitem(PRESETS, parent.name, parent)
    monkeypatch.setitem(PRESETS, child.name, child)
    parent_model, parent_manifest = load_or_train(parent.name, data_dir=tmp_path)
    child_model, manifest = load_or_train(child.name, data_dir=tmp_path)
    assert manifest["init_from"] == {
        "preset": parent.name,
        "sha256": parent_manifest["sha256"],
    }
    # with a negligible learning rate the child keeps the parent's weights
    weights = zip(
        parent_model.state_dict().values(),
        child_model.state_dict().values(),
        strict=True,
    )
    for p, q in weights:
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_checkpoint_matches_its_manifest_and_preset(name):
    preset = get_preset(
        name
    )  # every committed checkpoint has a preset, so a training command
    manifest = json.loads(checkpoint_paths(name)[1].read_text())
    assert tuple(manifest) == MANIFEST_KEYS
    assert manifest["manifest_sha256"] == manifest_digest(manifest)
    assert manifest["steps"] == preset.steps and manifest["seed"] == preset.seed
    assert len(manifest["curve"]["step"]) == preset.steps // preset.log_every
    model, _ = load_checkpoint(name)  # checks the sha256 and the whole preset
    assert sum(p.numel() for p in model.parameters()) == manifest["n_params"]
    assert manifest["metrics"]["eval_prompts"] == preset.eval_size
    if preset.init_from:  # a warm start names the exact checkpoint it continued from
        parent = json.loads(checkpoint_paths(preset.init_from)[1].read_text())
        assert manifest["init_from"] == {
            "preset": preset.init_from,
            "sha256": parent["sha256"],
        }
    else:
        assert manifest["init_from"] is None


def test_the_chapter_checkpoints_are_committed():
    book = {name for name, p in PRESETS.items() if not p.paper}
    assert book == set(COMMITTED)


def test_the_command_lists_every_preset(capsys):
    train_command([])
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert listed == set(PRESETS)
    with pytest.raises(SystemExit):
        train_command(["no_such_preset"])


def test_bad_preset_and_sampler():
    with pytest.raises(ValueError, match="name: expected one of"):
        get_preset("nope")
    base = get_preset("overview_noiseless")
    with pytest.raises(ValueError, match="loss: expected one of"):
        dataclasses.replace(base, loss="hinge")
    with pytest.raises(ValueError, match="metric: expected one of"):
        dataclasses.replace(base, metric="auc")
    with pytest.raises(TypeError, match="steps"):
        dataclasses.replace(base, steps=1.5)
    with pytest.raises(ValueError, match="inputs: expected one of"):
        RegressionPrompts(
            Curriculum.constant(2), Curriculum.constant(3), inputs="cauchy"
        )


def test_stale_checkpoints_follow_presets_and_parents(tmp_path, monkeypatch):
    from icl_lib.presets import retrain

    parent = tiny(get_preset("overview_noiseless"), "unit_parent")
    child = dataclasses.replace(parent, name="unit_child", init_from=parent.name)
    monkeypatch.setitem(PRESETS, parent.name, parent)
    monkeypatch.setitem(PRESETS, child.name, child)
    assert retrain.staleness(child.name, tmp_path) == "no checkpoint"
    load_or_train(parent.name, data_dir=tmp_path)
    load_or_train(child.name, data_dir=tmp_path)
    assert retrain.staleness(parent.name, tmp_path) is None
    assert retrain.staleness(child.name, tmp_path) is None
    order = retrain.dependency_order()
    assert order.index(parent.name) < order.index(child.name)
    # a retrained parent (another seed) makes the child stale, by the parent's hash
    monkeypatch.setitem(PRESETS, parent.name, dataclasses.replace(parent, seed=3))
    assert retrain.staleness(parent.name, tmp_path) == "preset changed"
    load_or_train(parent.name, data_dir=tmp_path, retrain=True)
    assert retrain.staleness(parent.name, tmp_path) is None
    assert retrain.staleness(child.name, tmp_path) == "parent unit_parent retrained"
    with pytest.raises(ValueError, match="name: expected one of"):
        retrain.staleness("no_such_preset")


def test_every_committed_book_checkpoint_is_current():
    from icl_lib.presets.retrain import stale

    assert stale() == {}


def test_paper_presets_are_never_retrained_by_the_stale_command():
    from icl_lib.presets.retrain import stale

    paper = {name for name, p in PRESETS.items() if p.paper}
    assert paper and not paper & set(stale())


def test_monitored_errors_are_logged_with_the_curve():
    base = tiny(get_preset("overview_noiseless"))
    task = dataclasses.replace(base.task, monitor_ks=(1, 3))
    _, manifest = train_preset(dataclasses.replace(base, task=task), progress=False)
    assert len(manifest["curve"]["error_at_k1"]) == 2
    assert len(manifest["curve"]["error_at_k3"]) == 2
    with pytest.raises(ValueError, match="monitor_ks: expected context sizes below"):
        dataclasses.replace(base.task, monitor_ks=(base.task.points.end,))
    with pytest.raises(TypeError, match="monitor_ks: expected a tuple"):
        dataclasses.replace(base.task, monitor_ks=[1])


@pytest.mark.parametrize("name", ["bayes_mixture", "selection_sparse"])
def test_stationary_samplers_log_their_monitored_errors(name):
    # the children whose claims show their trend with training (chapters 4 and 5)
    task = get_preset(name).task
    assert task.monitor_ks
    model = load_checkpoint("overview_noiseless")[0]
    logged = task.monitor(model)
    assert list(logged) == [f"error_at_k{k}" for k in task.monitor_ks]
    # the same fixed prompts every time, on which other learners can be measured
    first, again = task.monitor_batch(), task.monitor_batch()
    assert torch.equal(first.xs, again.xs) and torch.equal(first.ys, again.ys)
    expected = error_curve(model, first, task.monitor_ks)
    assert list(logged.values()) == pytest.approx(expected.tolist(), abs=1e-6)
    assert dataclasses.replace(task, monitor_ks=()).monitor(model) == {}
    with pytest.raises(ValueError, match="monitor_ks: expected context sizes below"):
        dataclasses.replace(task, monitor_ks=(task.n_points,))


class _CutAt:
    """A preset's sampler that stops the run (as a killed process would) at one step."""

    def __init__(self, task, step):
        self.task, self.step = task, step

    def sample(self, batch_size, step, gen):
        if step == self.step:
            raise KeyboardInterrupt
        return self.task.sample(batch_size, step, gen)

    def __getattr__(self, name):
        return getattr(self.task, name)


def test_a_cut_run_resumes_to_the_same_weights_and_curve(tmp_path):
    preset = dataclasses.replace(
        tiny(get_preset("overview_noiseless")),
        **recipe(steps=8, lr=1e-3, batch_size=4),
    )
    whole, whole_manifest = train_preset(preset, progress=False)
    state = tmp_path / "run.state"
    with pytest.raises(KeyboardInterrupt):
        train_preset(
            dataclasses.replace(preset, task=_CutAt(preset.task, 5)),
            progress=False,
            state_file=state,
            save_every=2,
        )
    saved = torch.load(state, weights_only=True)
    assert saved["step"] == 4  # the last save
    assert saved["devices"] == ["cpu"]
    # as if the first sitting had run on a GPU: the manifest names both devices
    torch.save({**saved, "devices": ["cuda"]}, state)
    other = dataclasses.replace(preset, lr=2e-3)
    with pytest.raises(ValueError, match="belongs to another run .its preset"):
        train_preset(other, progress=False, state_file=state, save_every=2)
    resumed, manifest = train_preset(
        preset, progress=False, state_file=state, save_every=2
    )
    assert not state.exists()  # a completed run leaves no state behind
    assert manifest["environment"]["device"] == "cuda+cpu"
    assert whole_manifest["environment"]["device"] == "cpu"
    assert manifest["curve"] == whole_manifest["curve"]
    assert manifest["metrics"] == whole_manifest["metrics"]
    for p, q in zip(
        whole.state_dict().values(), resumed.state_dict().values(), strict=True
    ):
        assert torch.equal(p, q)


def test_fit_refuses_a_state_it_cannot_resume():
    model = torch.nn.Linear(2, 1)
    gen = torch.Generator().manual_seed(0)

    def run(**options):
        def loss_fn(step):
            return model(torch.randn(4, 2, generator=gen)).pow(2).mean()

        settings = dict(steps=4, lr=1e-2, log_every=1, progress=False, generator=gen)
        return fit(model, loss_fn, **{**settings, **options})

    saved = []
    run(save_state=lambda s: saved.append(copy.deepcopy(s)), save_every=2)
    with pytest.raises(ValueError, match="the saved run has 4 steps, this one 6"):
        run(steps=6, resume=saved[0], save_every=2)
    with pytest.raises(
        ValueError, match="save_every: expected a multiple of log_every"
    ):
        run(log_every=2, save_state=print, save_every=3)
    with pytest.raises(ValueError, match="generator: expected the generator"):
        run(generator=None, save_state=print)


def test_every_book_preset_follows_the_recipe_or_says_why():
    """Issue 23: one recipe for every book preset, unless the preset says why not (a
    paper preset follows its paper); a reason beside a preset that follows it is
    stale."""
    for name, preset in PRESETS.items():
        if preset.paper:
            continue
        if follows_recipe(preset):
            assert not preset.off_recipe, (
                f"{name}: follows the recipe, yet says why not"
            )
        else:
            assert len(preset.off_recipe.split()) >= 8, (
                f"{name}: off the recipe, no reason"
            )


def test_follows_recipe_tells_the_recipe_from_its_parts():
    base = PRESETS["gd_looped2"]
    assert follows_recipe(base)
    assert not follows_recipe(dataclasses.replace(base, warmup_steps=0))
    assert not follows_recipe(dataclasses.replace(base, cosine_decay=False))
    assert not follows_recipe(dataclasses.replace(base, grad_clip=None))
    with pytest.raises(TypeError, match="preset"):
        follows_recipe("gd_looped2")


def test_the_reason_for_leaving_the_recipe_stays_out_of_the_manifest():
    """It documents a run and does not change it, so it must not make a checkpoint
    stale; and it must be a string."""
    preset = PRESETS["induction_attn2"]
    assert preset.off_recipe
    assert "off_recipe" not in preset.to_dict()
    with pytest.raises(TypeError, match="off_recipe"):
        dataclasses.replace(preset, off_recipe=None)
