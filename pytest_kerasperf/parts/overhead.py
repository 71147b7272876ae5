"""The overhead metric's part of a record: the same workload measured in its plain framework."""

from __future__ import annotations

import msgspec

from pytest_kerasperf.codec import Count
from pytest_kerasperf.parts.latency import LatencyRecord


class PlainTwinRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The same workload in the plain framework, without Keras, measured in the same run.

    ``framework`` is ``"torch"`` (an ``nn.Module`` under ``torch.no_grad``) or
    ``"jax"`` (``jax.numpy`` functions over a parameter pytree); ``name`` says
    which plain workload (``"plain torch LM generate 32 compiled"``).
    """

    framework: str
    name: str
    calls: Count
    latency: LatencyRecord | None = msgspec.field(name="latency_ms")
