"""Where the time goes: the workload run again under pyinstrument, a sampling profiler.

cProfile (the count pass) sees every call and so slows each one down by
about the same amount, which distorts where time goes; a sampling profiler
looks at the stack every ``INTERVAL`` seconds and leaves the calls alone.
The workload is called until at least ``MIN_SECONDS`` have been sampled, so a
forward of a millisecond still gets a few hundred samples.

The HTML is pyinstrument's interactive call tree; the text is its console
rendering (Keras frames shown, other libraries folded), trimmed, after the
hottest frames by self time.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyinstrument import Profiler
from pyinstrument.renderers import ConsoleRenderer
from pyinstrument.session import Session

from pytest_kerasperf.measure import reach
from pytest_kerasperf.measure.names import relative_path
from pytest_kerasperf.measure.users import as_users_run_it

#: Seconds between samples: small enough that a fast forward gets samples.
INTERVAL = 0.0005
#: Seconds of workload calls sampled, at least (one call, however long it takes).
MIN_SECONDS = 0.2
#: Lines of pyinstrument's text rendering kept (the HTML has everything).
MAX_LINES = 60
#: Frames listed by self time before the call tree.
HOTTEST = 5
#: Frames of these packages are never folded into pyinstrument's library groups.
SHOW_REGEX = r".*[/\\](keras|keras_hub|keras_nlp|keras_cv)[/\\]"

_SEP = "\x00"  # pyinstrument's frame info: identifier parts
_ATTRIBUTES = "\x01"  # pyinstrument's frame info: attributes (c<class>, l<line>)


@dataclass(frozen=True)
class HotFrame:
    """A frame where samples landed (self time), with the Python frame that called a builtin."""

    name: str  # "keras/src/layers/core/dense.py:Dense.call", "sleep (built-in)"
    line: int | None  # the line the samples were on (Python frames)
    seconds: float
    fraction: float  # of all sampled time
    caller: str | None = None  # for a builtin: "keras/src/layers/core/dense.py:Dense.call line 139"

    def describe(self) -> str:
        where = f" line {self.line}" if self.line else ""
        called = f" in {self.caller}" if self.caller else ""
        return f"{self.fraction:6.1%}  {self.name}{where}{called}"


@dataclass(frozen=True)
class WorkloadProfile:
    html_path: Path
    text: str  # pyinstrument's text rendering, trimmed to MAX_LINES
    hottest: tuple[HotFrame, ...]
    calls: int  # workload calls profiled
    seconds: float  # wall time profiled
    samples: int

    def summary(self) -> str:
        """The hottest frames, then the call tree: the report section and the JSON ``text``."""
        lines = [
            f"pyinstrument: {self.calls} workload call{'s' if self.calls != 1 else ''} in "
            f"{self.seconds:.3f} s, {self.samples} samples; hottest frames by self time:"
        ]
        lines += [f"  {frame.describe()}" for frame in self.hottest]
        return "\n".join(lines) + "\n\n" + self.text


def profile_workload(
    call: Callable[[], Any],
    sync: Callable[[Any], Any],
    html_path: Path,
    *,
    description: str | None = None,
) -> WorkloadProfile:
    """Call ``sync(call())`` under pyinstrument until ``MIN_SECONDS`` are sampled; write HTML.

    Runs as users run Keras (``as_users_run_it``), as the measured calls did.
    ``html_path``'s parent directories are created.
    """
    profiler = Profiler(interval=INTERVAL, async_mode="disabled")
    calls = 0
    with as_users_run_it(), reach.paused():
        profiler.start(
            caller_frame=inspect.currentframe(),
            target_description=description or "kerasperf workload",
        )
        started = time.perf_counter()
        try:
            while True:
                sync(call())
                calls += 1
                if time.perf_counter() - started >= MIN_SECONDS:
                    break
        finally:
            session = profiler.stop()
    html_path.parent.mkdir(parents=True, exist_ok=True)
    profiler.write_html(html_path, show_all=False)
    text = profiler.output(
        _TreeRenderer(
            unicode=False,
            color=False,
            show_all=False,
            processor_options={"show_regex": SHOW_REGEX},
        )
    )
    return WorkloadProfile(
        html_path=html_path,
        text=trim(text, MAX_LINES),
        hottest=hottest_frames(session.frame_records),
        calls=calls,
        seconds=session.duration,
        samples=session.sample_count,
    )


class _TreeRenderer(ConsoleRenderer):
    """pyinstrument's text rendering without its banner: the call tree only."""

    def render_preamble(self, session: Session) -> str:
        return ""


def trim(text: str, max_lines: int) -> str:
    """At most ``max_lines`` lines (blank lines at either end dropped), saying what was cut."""
    lines = text.strip("\n").splitlines()
    if len(lines) <= max_lines:
        return "\n".join(lines)
    cut = len(lines) - max_lines
    return "\n".join([*lines[:max_lines], f"... {cut} more lines in the HTML profile"])


def _frame(info: str) -> tuple[str, str, int | None]:
    """(readable name, file, line) of one pyinstrument frame info string."""
    identifier, _, attributes = info.partition(_ATTRIBUTES)
    parts = identifier.split(_SEP)
    function, file = parts[0], parts[1] if len(parts) > 1 else ""
    owner = ""
    line = None
    for attribute in attributes.split(_ATTRIBUTES) if attributes else ():
        if attribute.startswith("c"):
            owner = attribute[1:] + "."
        elif attribute.startswith("l") and attribute[1:].isdigit():
            line = int(attribute[1:])
    if not file or file.startswith("<"):
        kind = file.strip("<>") or "native"
        return f"{function} ({kind})", file, None
    return f"{relative_path(file)}:{owner}{function}", file, line


_SYNTHETIC = re.compile(r"^\[\w+\]")  # pyinstrument's [self], [await], [out-of-context]


def hottest_frames(
    records: Iterable[tuple[Sequence[str], float]], limit: int = HOTTEST
) -> tuple[HotFrame, ...]:
    """The frames where most sampled time was spent, by self time, biggest first."""
    seconds: dict[tuple[str, int | None, str | None], float] = defaultdict(float)
    total = 0.0
    for stack, elapsed in records:
        frames = [info for info in stack if not _SYNTHETIC.match(info)]
        if not frames:
            continue
        total += elapsed
        name, file, line = _frame(frames[-1])
        caller = None
        if (not file or file.startswith("<")) and len(frames) > 1:
            caller_name, caller_file, caller_line = _frame(frames[-2])
            if caller_file and not caller_file.startswith("<"):
                caller = caller_name + (f" line {caller_line}" if caller_line else "")
        seconds[(name, line, caller)] += elapsed
    ranked = sorted(seconds.items(), key=lambda item: (-item[1], item[0][0]))[:limit]
    return tuple(
        HotFrame(
            name=name,
            line=line,
            seconds=value,
            fraction=value / total if total > 0 else 0.0,
            caller=caller,
        )
        for (name, line, caller), value in ranked
    )


_UNSAFE = re.compile(r"[^A-Za-z0-9._\[\]=+-]+")
_MAX_NAME = 150


def html_name(key: str, backend: str, mode: str) -> str:
    """``profile-torch-test_x.py__test_y[eager].html`` for key ``test_x.py::test_y[eager]``.

    The mode is added (``[compiled]``) when the key's parameters do not name it;
    characters a file name should not hold become ``_``, and a name that
    changed beyond that, or grew too long, gets a hash of the key.
    """
    name = key.replace("::", "__")
    params = key[key.index("[") :] if "[" in key else ""
    if mode not in re.split(r"[^A-Za-z0-9_]+", params):
        name += f"[{mode}]"
    safe = _UNSAFE.sub("_", name)
    if safe != name or len(safe) > _MAX_NAME:
        digest = hashlib.sha1(f"{backend}/{key}/{mode}".encode()).hexdigest()[:8]
        safe = f"{safe[:_MAX_NAME]}-{digest}"
    return f"profile-{backend}-{safe}.html"
