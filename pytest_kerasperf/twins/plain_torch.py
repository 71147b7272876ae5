"""The issue script's plain PyTorch models (``run_torch()``), without Keras.

Copied from the script: the CNN as an ``nn.Sequential`` on NCHW images, the LM
as its ``Block`` (pre-LayerNorm ``nn.MultiheadAttention`` with the square
subsequent mask *and* ``is_causal=True``, exact-GELU feed-forward, residuals)
and ``LLM`` (embedding, blocks, LayerNorm, linear head), both ``.eval()``; the
forwards run under ``torch.no_grad()``; ``gen_torch`` is the script's greedy
loop (it calls the *eager* LM, and its compiled mode is
``torch.compile(gen_torch)``, as in the script).

Differences from the script: the weights are seeded (``torch.manual_seed(SEED)``
inside a forked RNG, so the caller's torch RNG is left as it was), the inputs
are :mod:`pytest_kerasperf.workloads`'s (its seeded images transposed to NCHW,
its all-ones prompt as ``torch.long``), each call enters ``torch.no_grad()``
itself (the script wraps its whole timing loop in one), and the device is cuda
when available, else cpu (the script also tries mps).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from pytest_kerasperf import backends, twins, workloads
from pytest_kerasperf.twins import PlainWorkload

Generate = Callable[[torch.Tensor], torch.Tensor]

_MODE_LABELS = {"eager": "eager", "compiled": "torch.compile"}

# Built once per process (``twins.built``): models, inputs and compiled callables, keyed by
# (what, mode) with mode "eager" or "compiled" ("" for inputs).
_cached = functools.partial(twins.built, "torch")


def device() -> str:
    """``cuda`` when torch sees a GPU, else ``cpu``."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def count_params(model: nn.Module) -> int:
    """The script's count: ``sum(p.numel() for p in model.parameters())``."""
    return sum(p.numel() for p in model.parameters())


def build_cnn() -> nn.Module:
    """The script's CNN (NCHW), seeded, on :func:`device`, in eval mode: 113,866 params."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(workloads.SEED)
        cnn = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(128, 10),
        )
    return cnn.to(device()).eval()


class Block(nn.Module):
    """The script's transformer block: pre-LN causal self-attention and GELU FF, residuals."""

    def __init__(self) -> None:
        super().__init__()
        hdim = workloads.HDIM
        self.ln1 = nn.LayerNorm(hdim)
        self.ln2 = nn.LayerNorm(hdim)
        self.attn = nn.MultiheadAttention(hdim, workloads.HEADS, batch_first=True)
        self.ff = nn.Sequential(
            nn.Linear(hdim, hdim * 4),
            nn.GELU(),
            nn.Linear(hdim * 4, hdim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1), device=x.device)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, is_causal=True)[0]
        out: torch.Tensor = x + self.ff(self.ln2(x))
        return out


class LLM(nn.Module):
    """The script's LM: embedding, ``NLAYERS`` blocks, LayerNorm, linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(workloads.VOCAB, workloads.HDIM)
        self.blocks = nn.ModuleList([Block() for _ in range(workloads.NLAYERS)])
        self.ln = nn.LayerNorm(workloads.HDIM)
        self.head = nn.Linear(workloads.HDIM, workloads.VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x)
        out: torch.Tensor = self.head(self.ln(x))
        return out


def build_lm() -> nn.Module:
    """The script's LM, seeded, on :func:`device`, in eval mode: 2,105,344 params."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(workloads.SEED)
        llm = LLM()
    return llm.to(device()).eval()


def make_generate(llm: nn.Module) -> Generate:
    """The script's ``gen_torch``: ``GEN`` greedy steps over a fixed window, eager ``llm``."""

    def gen_torch(prompt: torch.Tensor) -> torch.Tensor:
        cur = prompt.clone()
        for _ in range(workloads.GEN):
            cur = torch.cat([cur[:, 1:], llm(cur)[:, -1:].argmax(-1)], 1)
        return cur

    return gen_torch


def cnn_input() -> torch.Tensor:
    """``workloads.cnn_input()`` (NHWC float32) as an NCHW tensor on :func:`device`."""
    return torch.from_numpy(workloads.cnn_input()).permute(0, 3, 1, 2).contiguous().to(device())


def lm_prompt() -> torch.Tensor:
    """``workloads.lm_prompt()`` as a ``torch.long`` tensor on :func:`device`."""
    return torch.from_numpy(workloads.lm_prompt()).to(torch.long).to(device())


def _model(kind: str) -> nn.Module:
    model: nn.Module = _cached((kind, "eager"), build_cnn if kind == "cnn" else build_lm)
    return model


def _forward(kind: str, mode: str) -> Callable[[torch.Tensor], torch.Tensor]:
    model = _model(kind)
    if mode == "eager":
        return model
    compiled: Callable[[torch.Tensor], torch.Tensor] = _cached(
        (kind, "compiled"), lambda: torch.compile(model)
    )
    return compiled


def _generate(mode: str) -> Generate:
    gen: Generate = _cached(("lm_generate", "eager"), lambda: make_generate(_model("lm")))
    if mode == "eager":
        return gen
    compiled: Generate = _cached(("lm_generate", "compiled"), lambda: torch.compile(gen))
    return compiled


def _no_grad(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> Callable[[], Any]:
    def call() -> torch.Tensor:
        with torch.no_grad():
            return fn(x)

    return call


def workload(name: str, mode: str) -> PlainWorkload:
    """The plain torch ``name`` (a ``twins.WORKLOADS`` entry) in ``mode`` (both checked by
    ``twins.plain_workload``); see the package."""
    kind, label, generates = twins.model_of(name)
    x: torch.Tensor = _cached((f"{kind}_input", ""), cnn_input if kind == "cnn" else lm_prompt)
    return PlainWorkload(
        framework="torch",
        name=f"plain torch {label} ({_MODE_LABELS[mode]})",
        call=_no_grad(_generate(mode) if generates else _forward(kind, mode), x),
        sync=backends.make_sync("torch"),
        params=count_params(_model(kind)),
    )
