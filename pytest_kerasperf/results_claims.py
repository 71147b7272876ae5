"""What a results file says about itself, held to what it carries (``results_file.decode``).

A results file comes from elsewhere (a fork's CI artifact), so none of its claims is taken on
trust where the file itself carries what decides it: where a record is filed (its backend and
variant) must agree with the environment the record holds; a verdict with the counts of the
record and of its baseline; the run's account with its results.  Each function returns one
line naming the field and the rule, or None.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_kerasperf import environment
from pytest_kerasperf.accounting import RunAccount
from pytest_kerasperf.metrics.calls import CallsChange
from pytest_kerasperf.outcome import Outcome

#: Facts only some backends record (``backends.compiler_facts``): their presence names a run.
_COMPILER_FACTS = {
    "torch.inductor_cpu_isa": ("torch",),
    "jax.device_count": ("jax", "numpy"),
}
_RERECORD_BACKEND = re.compile(r"(?:^| )KERAS_BACKEND=(\S+)")
_RERECORD_NNX = re.compile(r"(?:^| )KERAS_NNX_ENABLED=(\S+)")
_PYTHON_VERSION = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?([a-z]+[0-9]*)?\+?$")
#: The statuses a failing verdict has, and those of a verdict that compared nothing (an
#: ``over-budget`` one may have compared or not).
_FAILING = ("regressed", "over-budget", "win-not-recorded")
_NOT_COMPARED = ("new", "mismatch")


def placement(outcome: Outcome) -> str | None:
    """The backend, Python, device and NNX setting that file a record agree with its
    environment, and with the baseline it was compared with."""
    record = outcome.record
    env = record.environment
    if env.get("backend") != record.backend:
        return (
            f"record/backend: {record.backend!r}, but its record/environment/backend is "
            f"{env.get('backend')!r}: a record is filed under the backend it was measured on"
        )
    for fact, runs in _COMPILER_FACTS.items():
        if fact in env and record.backend not in runs:
            return (
                f"record/backend: {record.backend!r}, but its environment holds {fact!r}, "
                f"which only a {' or '.join(runs)} run records"
            )
    python = env.get("python")
    if python is None or not _PYTHON_VERSION.match(python):
        return f"record/environment/python: {python!r} is not a Python version"
    problem = _device_problem(outcome) or _rerecord_problem(outcome)
    if problem is not None:
        return problem
    if record.backend == "jax":
        said = (env.get("env.KERAS_NNX_ENABLED") or "").lower() in ("true", "1")
        if said and env.get("keras.nnx_enabled") == "False":
            return (
                "record/environment/keras.nnx_enabled: 'False', but its "
                "env.KERAS_NNX_ENABLED enables NNX"
            )
        if environment.nnx_enabled(env) and not env.get("flax"):
            return "record/environment/keras.nnx_enabled: NNX, but the environment has no flax"
    base = outcome.baseline
    if outcome.verdict.compared and base is not None:
        variant = environment.variant_of(env, record.backend)
        entry = environment.variant_of(base.environment, record.backend)
        if entry != variant:
            return f"variant {variant!r}, but it was compared with an entry of variant {entry!r}"
        differ = environment.mismatched_fields(base.environment, env, record.backend)
        if differ:
            return f"record/environment: compared with its baseline, yet they differ: {differ[0]}"
    return None


def _device_problem(outcome: Outcome) -> str | None:
    """The device kind (the variant's) agrees with the accelerator flag and the latency's."""
    env = outcome.record.environment
    kind = environment.device_kind(env)
    accelerator = env.get("accelerator")
    if accelerator is not None and (kind != "cpu") != (accelerator == "yes"):
        return (
            f"record/environment/device: {env.get('device')!r} ({kind}), but its "
            f"accelerator is {accelerator!r}"
        )
    latency = outcome.record.latency
    if latency is not None and (
        latency.device != env.get("device") or latency.accelerator != (kind != "cpu")
    ):
        return (
            f"record/environment/device: {env.get('device')!r}, but record/latency_ms was "
            f"timed on {latency.device!r}"
        )
    return None


def _rerecord_problem(outcome: Outcome) -> str | None:
    """The command that re-records the test names the backend and NNX setting it ran under
    (``comparison._environment_words``)."""
    record, command = outcome.record, outcome.rerecord or ""
    backend = _RERECORD_BACKEND.search(command)
    if backend is not None and backend[1] != record.backend:
        return f"record/backend: {record.backend!r}, but rerecord runs KERAS_BACKEND={backend[1]}"
    nnx = _RERECORD_NNX.search(command)
    if nnx is not None and (
        record.backend != "jax" or (nnx[1] == "true") != environment.nnx_enabled(record.environment)
    ):
        return (
            f"record/environment/keras.nnx_enabled: {record.environment.get('keras.nnx_enabled')!r}"
            f" on {record.backend}, but rerecord runs KERAS_NNX_ENABLED={nnx[1]}"
        )
    return None


def verdict(outcome: Outcome, updating: bool) -> str | None:
    """The verdict's status agrees with its failures and with the calls of the record and of
    its baseline (``judging.judge``: more calls than the baseline always regress)."""
    judged, base, calls = outcome.verdict, outcome.baseline, outcome.record.calls
    status = judged.status
    if status in _FAILING and not judged.failures:
        return f"verdict/status: {status!r} with no failure"
    if status not in _FAILING and any(f.kind != "not_compared" for f in judged.failures):
        return f"verdict/status: {status!r}, but it holds a failure of {judged.failures[0].kind}"
    if status != "over-budget" and judged.compared == (status in _NOT_COMPARED):
        return f"verdict/compared: {judged.compared}, but its status is {status!r}"
    if judged.compared and base is None:
        return "verdict/compared: true, but the result holds no baseline"
    if base is None or not judged.compared:
        return None
    change = judged.change(CallsChange)
    if change is not None and (change.before, change.after) != (base.calls, calls):
        return (
            f"verdict/changes: calls {change.before:,} -> {change.after:,}, but the baseline "
            f"holds {base.calls:,} and the record {calls:,}"
        )
    if updating:
        return None  # the baseline was replaced: its regressions are notes
    delta = calls - base.calls
    if delta > 0 and status != "regressed":
        return (
            f"verdict/status: {status!r}, but record/calls {calls:,} is {delta:+,} over its "
            f"baseline's {base.calls:,}: more calls regress"
        )
    if delta < 0 and status == "pass":
        return (
            f"verdict/status: 'pass', but record/calls {calls:,} is {delta:+,} under its "
            f"baseline's {base.calls:,}: fewer calls are an improvement"
        )
    return None


def one_run(outcomes: Sequence[Outcome]) -> str | None:
    """A results file is one run's: one backend and one variant."""
    records = [outcome.record for outcome in outcomes]
    groups = [(r.backend, environment.variant_of(r.environment, r.backend)) for r in records]
    for index, (backend, variant) in enumerate(groups):
        if (backend, variant) != groups[0]:
            return (
                f"results/{index} ({outcomes[index].key}): {backend} {variant}, but results/0 is "
                f"{groups[0][0]} {groups[0][1]}: a results file holds one run"
            )
    return None


def summary(account: RunAccount | None, outcomes: Sequence[Outcome]) -> str | None:
    """The run's account counts the results the file holds (``accounting.account``)."""
    if account is None:
        return None
    compared = sum(1 for outcome in outcomes if outcome.verdict.compared)
    for field, said, held in (
        ("measured", account.measured, len(outcomes)),
        ("compared", account.compared, compared),
        ("not_compared", sum(account.not_compared.values()), len(outcomes) - compared),
    ):
        if said != held:
            return f"summary/{field}: {said:,}, but the results say {held:,}"
    return None
