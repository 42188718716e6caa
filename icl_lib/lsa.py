"""Linear self-attention (LSA): the transformer that in-context learning theory can solve.

A prompt becomes the token matrix ``Z (B, N+1, d+1)``: row ``j <= N`` is ``e_j = (x_j, y_j)``, the
last row is the query ``(x_q, 0)``. One LSA layer with heads ``h`` updates *every* token from the
context tokens ``e_1..e_N`` (keys and values never include the query):

    e_j <- e_j + sum_h  P_h W_{V,h} sum_{i <= N} e_i (e_i^T W_{K,h}^T W_{Q,h} e_j)

(von Oswald et al. 2023, without softmax). The prediction is *minus* the label entry of the
query token after the last layer, the sign under which one layer equals one GD step from ``W_0 = 0``
(:mod:`icl_lib.constructions`). The output depends on the weights only through the products
``W_KQ = W_K^T W_Q`` and ``W_PV = P W_V``: a model can be *factored* (four matrices per head,
as trained by von Oswald et al.) or *merged* (the two products, as analysed by Ahn et al. 2023).
``looped=True`` shares one layer's weights across depth. Chapter 2; reused by later chapters.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import asdict, dataclass

import torch
from torch import nn

from ._checks import check_dtype, check_positive_int, check_prompt, check_real, check_tensor


def prompt_tokens(xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
    """The token matrix ``Z (B, N+1, d+1)``: rows ``(x_i, y_i)`` then the query row ``(x_q, 0)``."""
    B, N, d = check_prompt(xs, ys, x_query)
    context = torch.cat((xs, ys.unsqueeze(-1)), dim=-1)  # (B, N, d+1)
    query = torch.cat((x_query, x_query.new_zeros(B, 1)), dim=-1).unsqueeze(1)  # (B, 1, d+1)
    return torch.cat((context, query), dim=1)


def lsa_layer(Z: torch.Tensor, kq: torch.Tensor, pv: torch.Tensor, *, query_only: bool = False) -> torch.Tensor:
    """One LSA layer on tokens ``Z (B, T, D)`` whose first ``T - 1`` rows are the context.

    Args:
        kq: ``W_K^T W_Q`` per head, shape ``(H, D, D)``.
        pv: ``P W_V`` per head, shape ``(H, D, D)``.
        query_only: return only the updated query row, shape ``(B, 1, D)`` (enough for a last layer).

    Returns ``Z + sum_h Z kq_h^T (C^T C) pv_h^T`` with ``C = Z[:, :-1]``, i.e. token ``j`` gains
    ``sum_h pv_h sum_i e_i (e_i^T kq_h e_j)``.
    """
    C = Z[:, :-1]  # (B, N, D), the context tokens: keys and values
    gram = C.transpose(1, 2) @ C  # (B, D, D) = sum_i e_i e_i^T
    # e_i^T kq e_j summed against pv e_i: delta_j = pv gram kq e_j  (row form: e_j^T kq^T gram pv^T)
    mix = sum(kq[h].T @ gram @ pv[h].T for h in range(kq.shape[0]))  # (B, D, D)
    if query_only:
        Z = Z[:, -1:]
    return Z + Z @ mix


class LinearSelfAttention(nn.Module):
    """A stack of linear self-attention layers: ``forward(xs, ys, x_query) -> predictions (B,)``.

    Args:
        dim: input dimension ``d``; tokens have ``D = d + 1`` entries.
        n_layers: depth ``K``.
        n_heads: heads per layer.
        looped: share one layer's weights across all ``K`` layers (von Oswald's recurrent model).
        factored: keep ``W_Q, W_K, W_V, P`` per head (else the products ``W_KQ``, ``W_PV``).
        init_scale: each matrix starts ``N(0, init_scale / (K D))`` entrywise (von Oswald et al.'s
            variance scaling 0.002 / K); small, so the model starts near the zero predictor.
        seed: an int seed for the initialisation.
        dtype: float32 or float64.
    """

    def __init__(self, dim: int, *, n_layers: int = 1, n_heads: int = 1, looped: bool = False,
                 factored: bool = False, init_scale: float = 0.002, seed: int = 0,
                 dtype: torch.dtype = torch.float32):
        super().__init__()
        self.dim = check_positive_int("dim", dim)
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.n_heads = check_positive_int("n_heads", n_heads)
        init_scale = check_real("init_scale", init_scale, minimum=0.0)
        check_dtype("dtype", dtype)
        check_positive_int("seed", seed, minimum=0)
        self.looped, self.factored = bool(looped), bool(factored)
        D, n_blocks = dim + 1, 1 if looped else n_layers
        gen = torch.Generator().manual_seed(seed)
        std = (init_scale / (n_layers * D)) ** 0.5
        names = ("W_Q", "W_K", "W_V", "P") if factored else ("W_KQ", "W_PV")
        for name in names:
            init = std * torch.randn(n_blocks, n_heads, D, D, generator=gen, dtype=dtype)
            self.register_parameter(name, nn.Parameter(init))

    def _block(self, layer: int) -> int:
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < self.n_layers:
            raise ValueError(f"layer: expected an int in [0, {self.n_layers}), got {layer!r}")
        return 0 if self.looped else layer

    def kq(self, layer: int = 0) -> torch.Tensor:
        """The identifiable key-query product ``W_K^T W_Q`` of ``layer``, shape ``(H, D, D)``."""
        b = self._block(layer)
        return self.W_K[b].transpose(-1, -2) @ self.W_Q[b] if self.factored else self.W_KQ[b]

    def pv(self, layer: int = 0) -> torch.Tensor:
        """The identifiable projection-value product ``P W_V`` of ``layer``, shape ``(H, D, D)``."""
        b = self._block(layer)
        return self.P[b] @ self.W_V[b] if self.factored else self.W_PV[b]

    def forward_tokens(self, Z: torch.Tensor, *, return_all: bool = False):
        """Run every layer on tokens ``Z (B, N+1, D)``; with ``return_all`` also each layer's output."""
        check_tensor("Z", Z, 3)
        if Z.shape[2] != self.dim + 1:
            raise ValueError(f"Z: expected tokens of size d + 1 = {self.dim + 1}, got shape {tuple(Z.shape)}")
        outs = [Z]
        for layer in range(self.n_layers):
            Z = lsa_layer(Z, self.kq(layer), self.pv(layer))
            outs.append(Z)
        return (Z, outs) if return_all else Z

    def forward(self, xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
        """Predictions ``(B,)``: minus the query's label entry after the last layer."""
        if xs.ndim == 3 and xs.shape[2] != self.dim:
            raise ValueError(f"xs: expected d = {self.dim} features, got shape {tuple(xs.shape)}")
        Z = prompt_tokens(xs, ys, x_query)
        for layer in range(self.n_layers):  # the last layer only needs to update the query token
            Z = lsa_layer(Z, self.kq(layer), self.pv(layer), query_only=layer == self.n_layers - 1)
        return -Z[:, -1, -1]

    def predictions_by_layer(self, xs, ys, x_query) -> torch.Tensor:
        """The read-out after each layer ``1..K``: shape ``(K, B)``."""
        _, outs = self.forward_tokens(prompt_tokens(xs, ys, x_query), return_all=True)
        return torch.stack([-Z[:, -1, -1] for Z in outs[1:]])

    @torch.no_grad()
    def set_products(self, layer: int, kq: torch.Tensor, pv: torch.Tensor) -> "LinearSelfAttention":
        """Set a merged model's ``W_KQ`` and ``W_PV`` of ``layer`` (shapes ``(H, D, D)`` or ``(D, D)``)."""
        if self.factored:
            raise ValueError("factored: set_products needs a merged model (factored=False); "
                             "set W_Q, W_K, W_V and P directly")
        b, D = self._block(layer), self.dim + 1
        for name, value, target in (("kq", kq, self.W_KQ), ("pv", pv, self.W_PV)):
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
            value = value.expand(self.n_heads, D, D) if value.shape == (D, D) else value
            if tuple(value.shape) != (self.n_heads, D, D):
                raise ValueError(f"{name}: expected shape (H, D, D) = {(self.n_heads, D, D)} or (D, D), "
                                 f"got {tuple(value.shape)}")
            target[b] = value.to(target.dtype)
        return self


def in_context_loss(model, batch) -> torch.Tensor:
    """von Oswald et al.'s training loss ``0.5 * mean (prediction - y_q)^2``, the query being the last point."""
    xs, ys, xq, yq = batch.prompt(batch.n_points - 1)
    return 0.5 * ((model(xs, ys, xq) - yq) ** 2).mean()


def train_lsa(model: LinearSelfAttention, sampler, *, steps: int, batch_size: int = 2048, lr: float = 1e-3,
              seed: int = 0, log_every: int = 100, grad_clip: float | None = None, on_log=None,
              progress: bool = False) -> dict:
    """Train ``model`` with Adam on fresh prompts: ``sampler(batch_size, generator) -> RegressionBatch``.

    Every step draws ``batch_size`` new tasks from a generator seeded with ``seed`` (so a run is
    repeatable) and minimises :func:`in_context_loss` through :func:`icl_lib.train.fit`; returns its
    training curve. ``on_log(step, curve)`` may record metrics along the way.
    """
    from .tasks import make_generator
    from .train import fit

    if not isinstance(model, LinearSelfAttention):
        raise TypeError(f"model: expected a LinearSelfAttention, got {type(model).__name__}")
    if not callable(sampler):
        raise TypeError(f"sampler: expected a callable (batch_size, generator) -> RegressionBatch, got {type(sampler).__name__}")
    check_positive_int("batch_size", batch_size)
    gen = make_generator(seed)
    param = next(model.parameters())

    def loss_fn(step):
        return in_context_loss(model, sampler(batch_size, gen).to(device=param.device, dtype=param.dtype))

    return fit(model, loss_fn, steps=steps, lr=lr, log_every=log_every, grad_clip=grad_clip,
               on_log=on_log, progress=progress, desc="LSA")


def fit_full_batch(model: LinearSelfAttention, batch, *, max_iter: int = 200) -> list[float]:
    """Minimise :func:`in_context_loss` on one fixed ``batch`` with full-batch L-BFGS; returns the losses.

    Empirical risk minimisation on a large fixed sample: where the population loss is very flat
    along some directions (inputs with small variance, as in Ahn et al.'s experiment), Adam on
    fresh mini-batches creeps along them, while L-BFGS reaches the minimiser of the sample loss.
    """
    if not isinstance(model, LinearSelfAttention):
        raise TypeError(f"model: expected a LinearSelfAttention, got {type(model).__name__}")
    check_positive_int("max_iter", max_iter)
    param = next(model.parameters())
    batch = batch.to(device=param.device, dtype=param.dtype)
    optimiser = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=max_iter, history_size=50,
                                  tolerance_grad=1e-12, tolerance_change=1e-15, line_search_fn="strong_wolfe")
    losses = []

    def closure():
        optimiser.zero_grad(set_to_none=True)
        loss = in_context_loss(model, batch)
        loss.backward()
        losses.append(loss.item())
        return loss

    model.train()
    optimiser.step(closure)
    model.eval()
    return losses


@dataclass(frozen=True)
class LSAPreset:
    """A training run of a :class:`LinearSelfAttention` in von Oswald et al.'s setup (uniform inputs)."""

    name: str  # checkpoint file stem under data/
    dim: int = 10  # input dimension d
    n_context: int = 10  # context examples N (the prompt has N + 1 points)
    n_layers: int = 1  # depth K
    n_heads: int = 1  # heads per layer
    looped: bool = True  # one set of weights for every layer
    factored: bool = False  # train W_Q, W_K, W_V, P (True) or the products W_KQ, W_PV (False)
    steps: int = 5000  # Adam steps
    batch_size: int = 2048  # fresh tasks per step
    lr: float = 1e-3  # Adam learning rate
    grad_clip: float | None = None  # clip the gradient norm (deep looped models need it), None: no clipping
    seed: int = 0  # fixes the initialisation and every training batch
    description: str = ""  # what the preset is for

    def build(self) -> LinearSelfAttention:
        return LinearSelfAttention(self.dim, n_layers=self.n_layers, n_heads=self.n_heads, looped=self.looped,
                                   factored=self.factored, seed=self.seed)

    def sampler(self, batch_size, gen):
        from .tasks import uniform_linear_regression

        return uniform_linear_regression(batch_size, self.n_context + 1, self.dim, seed=gen)


LSA_PRESETS: dict[str, LSAPreset] = {
    p.name: p
    for p in (
        LSAPreset("gd_looped2", n_layers=2, steps=3000, batch_size=1024, lr=2e-3,
                  description="Chapter 2: two looped LSA layers, d = N = 10 (book preset, CPU, minutes)."),
        LSAPreset("gd_looped4", n_layers=4, steps=4000, batch_size=1024, lr=1e-3, grad_clip=1.0,
                  description="Chapter 2: four looped LSA layers, d = N = 10 (book preset, CPU, minutes)."),
        LSAPreset("gd_looped2_paper", n_layers=2, factored=True, steps=20000,
                  description="Chapter 2: von Oswald et al.'s factored two-layer run (paper preset, GPU)."),
        LSAPreset("gd_looped4_paper", n_layers=4, factored=True, steps=20000, grad_clip=1.0,
                  description="Chapter 2: factored four-layer run (paper preset, GPU)."),
    )
}


def _paths(name: str, data_dir=None):
    from pathlib import Path

    from .paths import DATA_DIR

    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    return folder / f"{name}.safetensors", folder / f"{name}.json"


def train_preset(name: str, *, data_dir=None, progress: bool = True, device=None):
    """Train the preset ``name`` from its seed and write ``data/<name>.safetensors`` + manifest.

    ``device`` (default: CUDA where present) only changes where the arithmetic runs; the batches
    are drawn on the CPU from the preset's seed.
    """
    from safetensors.torch import save_file

    if name not in LSA_PRESETS:
        raise ValueError(f"name: expected one of {sorted(LSA_PRESETS)}, got {name!r}")
    preset = LSA_PRESETS[name]
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model = preset.build().to(device)
    start = time.perf_counter()
    curve = train_lsa(model, preset.sampler, steps=preset.steps, batch_size=preset.batch_size, lr=preset.lr,
                      seed=preset.seed, log_every=100, grad_clip=preset.grad_clip, progress=progress)
    weights, meta = _paths(name, data_dir)
    weights.parent.mkdir(parents=True, exist_ok=True)
    model = model.cpu()
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(weights))
    manifest = {"name": name, "config": asdict(preset), "seed": preset.seed, "steps": preset.steps,
                "metrics": {"final_train_loss": curve["loss"][-1] if curve["loss"] else None}, "curve": curve,
                "wall_seconds": round(time.perf_counter() - start, 1), "torch": torch.__version__,
                "sha256": hashlib.sha256(weights.read_bytes()).hexdigest()}
    meta.write_text(json.dumps(manifest, indent=1) + "\n")
    return model.eval(), manifest


def load_or_train_lsa(name: str, *, retrain: bool = False, data_dir=None, progress: bool = False):
    """The committed checkpoint of preset ``name`` (hash and config checked), else train and save it.

    Returns ``(model, manifest)``; the manifest holds the config and the training curve.
    """
    from safetensors.torch import load_file

    if name not in LSA_PRESETS:
        raise ValueError(f"name: expected one of {sorted(LSA_PRESETS)}, got {name!r}")
    weights, meta = _paths(name, data_dir)
    if retrain or not (weights.exists() and meta.exists()):
        train_preset(name, data_dir=data_dir, progress=progress)
    manifest = json.loads(meta.read_text())
    if manifest.get("sha256") != hashlib.sha256(weights.read_bytes()).hexdigest():
        raise ValueError(f"{weights}: sha256 differs from its manifest; retrain with `python -m icl_lib.lsa {name}`")
    if manifest.get("config") != json.loads(json.dumps(asdict(LSA_PRESETS[name]))):
        raise ValueError(f"{meta}: config differs from the preset {name!r}; retrain with `python -m icl_lib.lsa {name}`")
    model = LSA_PRESETS[name].build()
    model.load_state_dict(load_file(str(weights)))
    return model.eval(), manifest


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train LSA presets and write their checkpoints under data/.")
    parser.add_argument("presets", nargs="*", help=f"preset names: {', '.join(sorted(LSA_PRESETS))}")
    parser.add_argument("--data-dir", default=None, help="where to write (default: the repository's data/)")
    args = parser.parse_args(argv)
    if not args.presets:
        for name, p in sorted(LSA_PRESETS.items()):
            print(f"{name:20s} {p.steps:>6d} steps  {p.description}")
        return
    for name in args.presets:
        _, manifest = train_preset(name, data_dir=args.data_dir)
        print(f"{name}: {manifest['wall_seconds']} s, final loss {manifest['curve']['loss'][-1]:.4f}")


if __name__ == "__main__":
    main()
