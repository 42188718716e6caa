"""The evidence for the cause of the first base models' positional defect.

The book's first chapter-1 models (commit d62c2ec: learned absolute positions, Garg et
al.'s curriculum, a constant learning rate) ignored some examples of their context. This
command loads those checkpoints from git history and writes data/positional_defect.json:

* the label influence of every example at k = 20 relative to least squares (noiseless
  model) and to the Bayes ridge (noisy model): near 0 at the ignored positions;
* the attention of each layer-1 head from the query token to every label token;
* a y-type score for each learned position vector: its projection on the direction from
  the mean x-token position vector to the mean y-token one (over the used positions);
  the ignored label positions score like x tokens;
* the influence after the ignored label positions' vectors are replaced by the mean
  used label-position vector: a causal test that the defect sits in those vectors.

    .venv/bin/python tools/positional_defect.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from icl_lib.analysis.curves import error_curve  # noqa: E402
from icl_lib.analysis.influence import influence_ratio  # noqa: E402
from icl_lib.learners.linear import ols, ridge  # noqa: E402
from icl_lib.models.gpt import ICLTransformer, TransformerConfig  # noqa: E402
from icl_lib.tasks import linear_regression  # noqa: E402

OLD = TransformerConfig(n_dims=5, n_positions=21, n_embd=64, n_layer=4, n_head=2)
K, PROMPTS, SEED, SIGMA = 20, 4096, 2024, 0.5


def old_model(commit: str, name: str) -> ICLTransformer:
    blob = subprocess.run(
        ["git", "show", f"{commit}:data/{name}.safetensors"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    with tempfile.NamedTemporaryFile(suffix=".safetensors") as f:
        f.write(blob)
        f.flush()
        model = ICLTransformer(OLD)
        model.load_state_dict(load_file(f.name))
    return model.eval()


def rounded(values) -> list[float]:
    return [round(v, 4) for v in values.tolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default="d62c2ec")
    parser.add_argument("--out", default=str(ROOT / "data" / "positional_defect.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = {"commit": args.commit, "k": K, "prompts": PROMPTS, "seed": SEED}

    noiseless = old_model(args.commit, "overview_noiseless")
    batch = linear_regression(PROMPTS, K + 1, 5, seed=SEED)
    ratio = influence_ratio(noiseless, ols, batch, K)
    ignored = [j for j in range(K) if ratio[j] < 0.2]
    used = [j for j in range(K) if j not in ignored]
    out["noiseless_influence_ratio"] = rounded(ratio)
    out["ignored_positions"] = ignored

    noisy = old_model(args.commit, "overview_noisy")
    noisy_batch = linear_regression(PROMPTS, K + 1, 5, noise_std=SIGMA, seed=SEED)
    bayes = lambda xs, ys, xq: ridge(xs, ys, xq, SIGMA**2)  # noqa: E731
    out["noisy_influence_ratio"] = rounded(
        influence_ratio(noisy, bayes, noisy_batch, K)
    )

    with torch.no_grad():
        _, cache = noiseless.run_with_cache(batch.xs[:512], batch.ys[:512])
    pattern = cache["blocks.1.attn.hook_pattern"][:, :, 2 * K].mean(0)  # (H, 2K + 1)
    out["layer1_attention_to_labels"] = [
        rounded(head[1 : 2 * K : 2]) for head in pattern
    ]

    W = noiseless.wpe.weight.detach()
    x_pos, y_pos = W[0 : 2 * K : 2], W[1 : 2 * K : 2]
    axis = y_pos[used].mean(0) - x_pos[used].mean(0)
    axis = axis / axis.norm()
    out["y_type_score_label_positions"] = rounded(y_pos @ axis)
    out["y_type_score_input_positions"] = rounded(x_pos @ axis)

    out["error_at_k20_before"] = round(error_curve(noiseless, batch, [K]).item(), 5)
    with torch.no_grad():
        for j in ignored:
            noiseless.wpe.weight[2 * j + 1] = y_pos[used].mean(0)
    out["influence_ratio_after_repair"] = rounded(
        influence_ratio(noiseless, ols, batch, K)
    )
    out["error_at_k20_after_repair"] = round(
        error_curve(noiseless, batch, [K]).item(), 5
    )
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
