"""The issue script's plain JAX models (``run_jax()``), as plain functions: no flax, no Keras.

The script writes its JAX models with flax; here they are the same computation
written with ``jax.numpy``, ``jax.lax`` and ``jax.nn`` over a parameter pytree
(nested dicts and a list of arrays), so the twin holds no framework layer
at all:

- CNN (NHWC): three 3x3 SAME convolutions with bias and relu, a 2x2 max pool
  with stride 2 after the second, the mean over H and W, ``Dense(10)``;
- LM: embedding, ``NLAYERS`` blocks of [LayerNorm, q/k/v ``Dense(HDIM)`` with
  bias, softmax attention masked with ``jnp.where(tril, s, -1e9)``, output
  ``Dense(HDIM)`` + residual, LayerNorm, ``Dense(4*HDIM)``, gelu,
  ``Dense(HDIM)`` + residual], a final LayerNorm, ``Dense(VOCAB)``.

Every layer computes what flax's does (``lax.conv_general_dilated`` with
NHWC/HWIO, ``lax.reduce_window`` max from ``-inf``, ``jnp.take`` embedding,
LayerNorm with scale, bias and epsilon 1e-6, ``jax.nn.gelu``'s tanh
approximation as ``flax.linen.gelu``), and the parameter shapes are flax's, so
the counts are the script's: 113,866 and 2,105,344.

Initialisation follows flax's defaults (``lecun_normal`` kernels, a ``variance_scaling``
embedding, zero biases, unit LayerNorm scales), drawn from ``PRNGKey(workloads.SEED)``: the
values are not flax's (flax splits its keys per module name) but are seeded and deterministic.

Modes, as the script's: ``eager`` calls the functions directly (op by op); ``compiled`` is
``jax.jit`` of the forward closure, and for generate the script's ``gen_jax_jit``.  The inputs
are ``workloads``'s, converted to device arrays once.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp

from pytest_kerasperf import backends, twins, workloads
from pytest_kerasperf.twins import PlainWorkload

#: A parameter pytree: dicts (and, for the LM's blocks, a list) of arrays.
Params = dict[str, Any]
Fn = Callable[[jax.Array], jax.Array]

LAYER_NORM_EPSILON = 1e-6  # flax.linen.LayerNorm's default

_MODE_LABELS = {"eager": "eager", "compiled": "jax.jit"}

# Built once per process (``twins.built``): parameters, inputs and (compiled) callables, keyed
# by (what, mode) with mode "eager" or "compiled" ("" for parameters and inputs).
_cached = functools.partial(twins.built, "jax")


def _keys(seed: int) -> Iterator[jax.Array]:
    """A fresh key per array: ``fold_in(PRNGKey(seed), n)`` for n = 0, 1, 2, ..."""
    base = jax.random.PRNGKey(seed)
    return (jax.random.fold_in(base, n) for n in itertools.count())


_KERNEL_INIT = jax.nn.initializers.lecun_normal()
_EMBED_INIT = jax.nn.initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)


def _dense(keys: Iterator[jax.Array], *shape: int) -> Params:
    """A kernel of ``shape`` (a conv's is (3, 3, in, out)) and its bias, as flax's."""
    return {
        "kernel": _KERNEL_INIT(next(keys), shape, jnp.float32),
        "bias": jnp.zeros(shape[-1:], jnp.float32),
    }


def _layer_norm() -> Params:
    hdim = workloads.HDIM
    return {"scale": jnp.ones((hdim,), jnp.float32), "bias": jnp.zeros((hdim,), jnp.float32)}


def init_cnn() -> Params:
    """The CNN's parameters (113,866), from ``PRNGKey(workloads.SEED)``."""
    keys = _keys(workloads.SEED)
    return {
        "conv1": _dense(keys, 3, 3, 3, 64),
        "conv2": _dense(keys, 3, 3, 64, 64),
        "conv3": _dense(keys, 3, 3, 64, 128),
        "dense": _dense(keys, 128, 10),
    }


def init_lm() -> Params:
    """The LM's parameters (2,105,344), from ``PRNGKey(workloads.SEED)``."""
    keys = _keys(workloads.SEED)
    hdim, vocab = workloads.HDIM, workloads.VOCAB
    embedding = _EMBED_INIT(next(keys), (vocab, hdim), jnp.float32)
    blocks = [
        {
            "ln1": _layer_norm(),
            "query": _dense(keys, hdim, hdim),
            "key": _dense(keys, hdim, hdim),
            "value": _dense(keys, hdim, hdim),
            "out": _dense(keys, hdim, hdim),
            "ln2": _layer_norm(),
            "ff1": _dense(keys, hdim, hdim * 4),
            "ff2": _dense(keys, hdim * 4, hdim),
        }
        for _ in range(workloads.NLAYERS)
    ]
    return {
        "embed": {"embedding": embedding},
        "blocks": blocks,
        "ln": _layer_norm(),
        "head": _dense(keys, hdim, vocab),
    }


def count_params(params: Params) -> int:
    """The script's count: ``sum(x.size for x in jax.tree.leaves(params))``."""
    return sum(int(x.size) for x in jax.tree.leaves(params))


def dense(p: Params, x: jax.Array) -> jax.Array:
    """``flax.linen.Dense``: ``x @ kernel + bias``."""
    y: jax.Array = x @ p["kernel"] + p["bias"]
    return y


def conv(p: Params, x: jax.Array) -> jax.Array:
    """``flax.linen.Conv(filters, (3, 3), padding="SAME")`` on NHWC, HWIO kernel, plus bias."""
    y: jax.Array = jax.lax.conv_general_dilated(
        x,
        p["kernel"],
        window_strides=(1, 1),
        padding="SAME",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    out: jax.Array = y + p["bias"]
    return out


def max_pool(x: jax.Array) -> jax.Array:
    """``flax.linen.max_pool(x, (2, 2), strides=(2, 2))`` (VALID padding) on NHWC."""
    y: jax.Array = jax.lax.reduce_window(
        x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"
    )
    return y


def layer_norm(p: Params, x: jax.Array) -> jax.Array:
    """``flax.linen.LayerNorm()`` over the last axis: epsilon 1e-6, scale and bias.

    The variance is flax's default "fast" one, ``max(0, E[x^2] - E[x]^2)``.
    """
    mean = jnp.mean(x, axis=-1, keepdims=True)
    mean2 = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    var = jnp.maximum(0.0, mean2 - jnp.square(mean))
    y: jax.Array = (x - mean) * jax.lax.rsqrt(var + LAYER_NORM_EPSILON) * p["scale"] + p["bias"]
    return y


def cnn_apply(params: Params, x: jax.Array) -> jax.Array:
    """The script's flax ``CNN.__call__`` on NHWC images: logits (batch, 10)."""
    x = jax.nn.relu(conv(params["conv1"], x))
    x = jax.nn.relu(conv(params["conv2"], x))
    x = max_pool(x)
    x = jax.nn.relu(conv(params["conv3"], x))
    return dense(params["dense"], x.mean(axis=(1, 2)))


def block_apply(p: Params, x: jax.Array) -> jax.Array:
    """The script's flax ``Block.__call__``: causal self-attention and gelu FF, residuals."""
    b, t, _ = x.shape
    hdim, heads = workloads.HDIM, workloads.HEADS
    h = hdim // heads
    r = x
    x = layer_norm(p["ln1"], x)
    q = dense(p["query"], x).reshape(b, t, heads, h).transpose(0, 2, 1, 3)
    k = dense(p["key"], x).reshape(b, t, heads, h).transpose(0, 2, 1, 3)
    v = dense(p["value"], x).reshape(b, t, heads, h).transpose(0, 2, 1, 3)
    s = (q @ k.transpose(0, 1, 3, 2)) / (h**0.5)
    s = jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((t, t))), s, -1e9), -1)
    x = dense(p["out"], (s @ v).transpose(0, 2, 1, 3).reshape(b, t, hdim)) + r
    r = x
    x = layer_norm(p["ln2"], x)
    return dense(p["ff2"], jax.nn.gelu(dense(p["ff1"], x))) + r


def lm_apply(params: Params, ids: jax.Array) -> jax.Array:
    """The script's flax ``LLM.__call__``: logits (batch, seq, VOCAB)."""
    x = jnp.take(params["embed"]["embedding"], ids, axis=0)
    for p in params["blocks"]:
        x = block_apply(p, x)
    return dense(params["head"], layer_norm(params["ln"], x))


def make_generate_eager(params: Params) -> Fn:
    """The script's ``gen_jax_eager``: ``GEN`` greedy steps in a Python loop."""

    def gen_jax_eager(prompt: jax.Array) -> jax.Array:
        cur = prompt
        for _ in range(workloads.GEN):
            nxt = lm_apply(params, cur)[:, -1:, :].argmax(-1)
            cur = jnp.concatenate([cur[:, 1:], nxt], 1)
        return cur

    return gen_jax_eager


def make_generate_jit(params: Params) -> Fn:
    """The script's ``gen_jax_jit``: one ``jax.jit`` of a ``lax.scan`` over ``GEN`` steps."""

    @jax.jit
    def gen_jax_jit(prompt: jax.Array) -> jax.Array:
        def body(c: jax.Array, _: None) -> tuple[jax.Array, None]:
            nxt = lm_apply(params, c)[:, -1:, :].argmax(-1)
            return jnp.concatenate([c[:, 1:], nxt], 1), None

        out: jax.Array = jax.lax.scan(body, prompt, None, length=workloads.GEN)[0]
        return out

    return gen_jax_jit


def cnn_input() -> jax.Array:
    """``workloads.cnn_input()`` (NHWC float32) as a device array."""
    return jnp.asarray(workloads.cnn_input())


def lm_prompt() -> jax.Array:
    """``workloads.lm_prompt()`` (int32) as a device array."""
    return jnp.asarray(workloads.lm_prompt())


def _params(kind: str) -> Params:
    params: Params = _cached((kind, ""), init_cnn if kind == "cnn" else init_lm)
    return params


def _forward(kind: str, mode: str) -> Fn:
    def build() -> Fn:
        params = _params(kind)
        apply = cnn_apply if kind == "cnn" else lm_apply

        def fwd(x: jax.Array) -> jax.Array:
            return apply(params, x)

        return fwd if mode == "eager" else jax.jit(fwd)

    fn: Fn = _cached((f"{kind}_forward", mode), build)
    return fn


def _generate(mode: str) -> Fn:
    make = make_generate_eager if mode == "eager" else make_generate_jit
    fn: Fn = _cached(("lm_generate", mode), lambda: make(_params("lm")))
    return fn


def _bind(fn: Fn, x: jax.Array) -> Callable[[], Any]:
    """``fn`` with its input bound by ``functools.partial`` (C code): no Python call of
    ours is counted, as the handle binds the Keras workload's arguments."""
    return functools.partial(fn, x)


def workload(name: str, mode: str) -> PlainWorkload:
    """The plain JAX ``name`` (a ``twins.WORKLOADS`` entry) in ``mode`` (both checked by
    ``twins.plain_workload``); see the package."""
    kind, label, generates = twins.model_of(name)
    x: jax.Array = _cached((f"{kind}_input", ""), cnn_input if kind == "cnn" else lm_prompt)
    how = "jax.jit+scan" if generates and mode == "compiled" else _MODE_LABELS[mode]
    return PlainWorkload(
        framework="jax",
        name=f"plain jax {label} ({how})",
        call=_bind(_generate(mode) if generates else _forward(kind, mode), x),
        sync=backends.make_sync("jax"),
        params=count_params(_params(kind)),
    )
