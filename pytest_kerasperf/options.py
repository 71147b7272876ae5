"""Command-line options and ini keys, declared once and read one way.

Each setting has a command-line option, an ini key (or none) and a default;
``read`` takes the option when given, else the ini value, else the default,
and checks it with the same function argparse uses, so a bad ini value fails
with the key's name instead of somewhere later.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

import pytest

from pytest_kerasperf.baseline_names import DEFAULT_TABLES
from pytest_kerasperf.option_types import non_negative_int, shard, tolerance
from pytest_kerasperf.settings import INSTRUCTIONS_FLOOR, INSTRUCTIONS_TOLERANCE, LATENCY_TOLERANCE

GROUP = "kerasperf"
#: Where profiles go without --kerasperf-profile-dir and --kerasperf-json (from rootdir).
DEFAULT_PROFILE_DIR = ".kerasperf/profiles"
#: The ini key of the modules kept in census table files (``baseline_table``).
TABLES_INI = "kerasperf_table_baselines"


@dataclass(frozen=True)
class Setting:
    option: str  # "--kerasperf-rounds"
    help: str
    ini: str | None = None  # "kerasperf_rounds"
    default: str | None = None  # none for a flag: an unset bool key reads false
    parse: Callable[[str], Any] | None = None  # None: a flag (on if option or ini says so)
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.option.lstrip("-").replace("-", "_")

    @property
    def is_flag(self) -> bool:
        return self.parse is None


SETTINGS = (
    Setting(
        "--kerasperf",
        "run perf tests (those using the kerasperf fixture or its markers) and gate them "
        "against the committed baselines; without it they are skipped. Needs PYTHONHASHSEED=0",
    ),
    Setting(
        "--kerasperf-update-baseline",
        "re-measure the perf tests that run and rewrite their baseline entries where "
        "something moved (implies --kerasperf); other entries are left untouched",
    ),
    Setting(
        "--kerasperf-strict",
        "fail the run when anything could not be compared: a baseline measured under "
        "another count-relevant environment, a missing or stale baseline entry, a perf "
        "test skipped for a missing framework, or no perf test at all",
        ini="kerasperf_strict",
    ),
    Setting(
        "--kerasperf-shard",
        "run only shard K of N of the selected tests (every Nth, from the Kth), the others "
        "deselected (none stale) (docs/census.md)",
        parse=shard,
        metavar="K/N",
    ),
    Setting(
        "--kerasperf-isolate",
        "run each perf test in a process of its own, forked before the first test from the "
        "canonical state: its numbers are what it counts alone in a fresh process (slower: "
        "a fork and the first-call work per test; kerasperf audit's reference; needs os.fork)",
    ),
    Setting(
        "--kerasperf-index-out",
        "write PATH: each perf test's Keras functions (its setup, call and teardown, "
        "profiled), what --kerasperf-changed selects by (docs/selection.md)",
        parse=str,
        metavar="PATH",
    ),
    Setting(
        "--kerasperf-changed",
        "run only the perf tests that the change since the commit of the index at PATH "
        "(--kerasperf-index-out) can move; the others are reported not affected, never "
        "passed; what cannot be mapped to functions runs them all, saying why",
        parse=str,
        metavar="INDEX",
    ),
    Setting(
        "--kerasperf-ratchet",
        "fail a perf test whose calls, graph breaks, recompiles or instructions improved on "
        "its baseline entry beyond the tolerance without the entry being re-recorded (a win "
        "not recorded): a looser entry would let a later regression pass. Latency is never "
        "ratcheted",
        ini="kerasperf_ratchet",
    ),
    Setting(
        "--kerasperf-baseline-dir",
        "directory of the baseline files <backend>.json, relative to rootdir",
        ini="kerasperf_baseline_dir",
        default="baselines",
        parse=str,
        metavar="DIR",
    ),
    Setting(
        "--kerasperf-requirements",
        "the pinned perf environment file (e.g. requirements/perf.txt): a baseline measured "
        "under other versions names it, with the command that re-records",
        ini="kerasperf_requirements",
        parse=str,
        metavar="PATH",
    ),
    Setting(
        "--kerasperf-json", "write every perf result to PATH as JSON", parse=str, metavar="PATH"
    ),
    Setting(
        "--kerasperf-markdown",
        "write the run's report to PATH as Markdown (a PR comment; its first line is a "
        "hidden marker a bot can find)",
        parse=str,
        metavar="PATH",
    ),
    Setting(
        "--kerasperf-junit-properties",
        "add a few numbers of each perf test (status, calls and their change, graph breaks, "
        "median latency) to its report's user_properties, which junitxml writes as "
        "<property> elements; without it nothing perf-specific goes into junitxml",
        ini="kerasperf_junit_properties",
    ),
    Setting(
        "--kerasperf-profile",
        "profile every perf test that measured something: run its workload again under "
        "pyinstrument and attach the profile (text in the report, HTML in the profile "
        "directory, its path in the JSON); without it only a failed latency is profiled",
    ),
    Setting(
        "--kerasperf-profile-dir",
        "directory of the profiles' HTML files, relative to rootdir (default: the directory "
        f"of --kerasperf-json's file if given, else {DEFAULT_PROFILE_DIR})",
        ini="kerasperf_profile_dir",
        parse=str,
        metavar="DIR",
    ),
    Setting(
        "--kerasperf-latency-tolerance",
        "relative slowdown of the median allowed before a latency regression",
        ini="kerasperf_latency_tolerance",
        default=f"{LATENCY_TOLERANCE:.2f}",
        parse=tolerance,
        metavar="FRACTION",
    ),
    Setting(
        "--kerasperf-gate-latency-on-cpu",
        "also fail on latency regressions and max_latency measured on a CPU "
        "(default: only on an accelerator; CPU latency is reported)",
        ini="kerasperf_gate_latency_on_cpu",
    ),
    Setting(
        "--kerasperf-plain",
        "also measure each perf test's plain twin where it names one (plain "
        "torch / plain JAX, same process and run) and report Keras/plain ratios; a test "
        "with a max_overhead budget always measures it",
        ini="kerasperf_plain",
    ),
    Setting(
        "--kerasperf-compare-ref",
        "compare against REF of the Keras repository under test (e.g. the PR's merge base), "
        "measured in this job, instead of the committed baselines: REF and the Keras under "
        "test run the selected perf tests in interleaved processes; counts compared exactly, "
        "latency by a statistical A/B verdict that fails a slowdown on any device "
        "(implies --kerasperf; docs/history.md)",
        parse=str,
        metavar="REF",
    ),
    Setting(
        "--kerasperf-compare-repo",
        "the Keras repository REF belongs to, bare or not (default: the git work tree whose "
        "top holds the imported keras)",
        parse=str,
        metavar="PATH",
    ),
    Setting(
        "--kerasperf-ab-processes",
        "with --kerasperf-compare-ref: the most pairs of processes (a base and a head, each "
        "timing --kerasperf-rounds rounds, default 60); it stops earlier once every test's "
        "verdict is sure (default 16)",
        ini="kerasperf_ab_processes",
        default="16",
        parse=non_negative_int,
        metavar="N",
    ),
    Setting(
        "--kerasperf-warmup",
        "untimed calls before timing (default: 10 where latency is gated, on an "
        "accelerator or with --kerasperf-gate-latency-on-cpu; else 1)",
        ini="kerasperf_warmup",
        parse=non_negative_int,
        metavar="N",
    ),
    Setting(
        "--kerasperf-rounds",
        "timed calls, each followed by a device sync; 0 skips timing (default: 50 where "
        "latency is gated, as the issue's script times; else 5: a CPU latency is reported, "
        "not gated)",
        ini="kerasperf_rounds",
        parse=non_negative_int,
        metavar="N",
    ),
    Setting(
        "--kerasperf-instructions",
        "also count the instructions one workload call executes, under callgrind (run pytest "
        "as `kerasperf callgrind -- <pytest args>`), store them in the baseline entries and "
        "gate them within --kerasperf-instructions-tolerance; latency is not timed under "
        "valgrind (docs/instructions.md)",
    ),
    Setting(
        "--kerasperf-instructions-tolerance",
        "relative growth of the instruction count allowed before a regression",
        ini="kerasperf_instructions_tolerance",
        default=f"{INSTRUCTIONS_TOLERANCE:g}",
        parse=tolerance,
        metavar="FRACTION",
    ),
    Setting(
        "--kerasperf-instructions-floor",
        "instructions a count may move by whatever the tolerance: the gate allows "
        "max(tolerance * entry, floor); the default is set from an A/A of small census "
        "workloads over many processes (docs/instructions.md)",
        ini="kerasperf_instructions_floor",
        default=str(INSTRUCTIONS_FLOOR),
        parse=non_negative_int,
        metavar="N",
    ),
    Setting(
        "--kerasperf-instructions-warmup",
        "uncounted calls before the counted ones (past CPython's quickening of code that "
        "runs once per call, after 8 executions)",
        ini="kerasperf_instructions_warmup",
        default="10",
        parse=non_negative_int,
        metavar="N",
    ),
    Setting(
        "--kerasperf-instructions-rounds",
        "counted calls, each on its own: the count is their median",
        ini="kerasperf_instructions_rounds",
        default="5",
        parse=non_negative_int,
        metavar="N",
    ),
)
_BY_OPTION = {s.option: s for s in SETTINGS}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "Keras performance gate (pytest-kerasperf)")
    for setting in SETTINGS:
        where = []
        if setting.ini:
            where.append(f"ini {setting.ini}")
        if setting.default is not None:
            where.append(f"default {setting.default}")
        text = setting.help + (f" ({', '.join(where)})" if where else "")
        how: dict[str, Any] = (
            {"action": "store_true"}
            if setting.is_flag
            else {"type": setting.parse, "metavar": setting.metavar}
        )
        group.addoption(setting.option, dest=setting.dest, help=text, **how)
        if setting.ini:
            kind: Literal["bool", "string"] = "bool" if setting.is_flag else "string"
            parser.addini(setting.ini, setting.help, type=kind, default=setting.default)
    parser.addini(
        TABLES_INI,
        "globs of the test modules whose baseline entries go into one table file per module "
        "and variant, totals only (<module>.table.json; docs/baselines.md, census tables); "
        "empty: none",
        type="linelist",
        default=list(DEFAULT_TABLES),
    )


def read(config: pytest.Config, option: str) -> Any:
    """The setting's value: command line, else ini, else default (None if none)."""
    setting = _BY_OPTION[option]
    given = config.getoption(setting.dest)
    if setting.is_flag:
        return bool(given) or bool(setting.ini and config.getini(setting.ini))
    if given is not None:
        return given
    raw = (str(config.getini(setting.ini) or "") if setting.ini else None) or setting.default
    if raw is None:
        return None
    assert setting.parse is not None
    try:
        return setting.parse(raw)
    except argparse.ArgumentTypeError as error:
        raise pytest.UsageError(f"ini option {setting.ini} = {raw!r}: {error}") from None


@dataclass(frozen=True)
class Options:
    enabled: bool
    updating: bool
    strict: bool
    baseline_dir: Path
    baseline_dir_given: bool  # on the command line: the re-record command must repeat it
    json_path: Path | None
    markdown_path: Path | None
    latency_tolerance: float
    gate_latency_on_cpu: bool
    warmup: int | None  # None: by whether latency is gated (handle.timing)
    rounds: int | None
    plain: bool  # --kerasperf-plain: measure named plain twins
    profile: bool  # --kerasperf-profile: every measured perf test, not only failed latency
    profile_dir: Path  # absolute: where profiles' HTML files are written
    requirements: str | None = None  # the pinned perf environment file, named on a mismatch
    compare_ref: str | None = None  # --kerasperf-compare-ref: A/B against REF, not baselines
    compare_repo: Path | None = None
    ab_processes: int = 16
    instructions: bool = False  # --kerasperf-instructions: count under callgrind
    instructions_tolerance: float = 0.001
    instructions_floor: int = 100_000
    instructions_warmup: int = 10
    instructions_rounds: int = 5
    junit_properties: bool = False  # --kerasperf-junit-properties
    ratchet: bool = False  # --kerasperf-ratchet: a win not recorded fails
    tables: tuple[str, ...] = DEFAULT_TABLES  # ini kerasperf_table_baselines
    shard: tuple[int, int] | None = None  # --kerasperf-shard K/N
    isolate: bool = False  # --kerasperf-isolate: each perf test in a forked process
    index_out: Path | None = None  # --kerasperf-index-out: write each perf test's functions
    changed: Path | None = None  # --kerasperf-changed: the index to select by


def options(config: pytest.Config) -> Options:
    # each setting's value by its name without "kerasperf_": most are fields as they are
    value = {s.dest.removeprefix("kerasperf_"): read(config, s.option) for s in SETTINGS}
    paths = ("json", "markdown", "index_out", "changed")
    path = {name: Path(value[name]) if value[name] else None for name in paths}
    root, cwd = config.rootpath, config.invocation_params.dir
    if value["profile_dir"]:
        profile_dir = root / value["profile_dir"]  # an absolute one stays absolute
    elif path["json"]:
        profile_dir = (cwd / path["json"]).parent
    else:
        profile_dir = root / DEFAULT_PROFILE_DIR
    as_they_are = {f.name: value[f.name] for f in fields(Options) if f.name in value}
    return Options(
        **{
            **as_they_are,
            "enabled": value["update_baseline"] or value["kerasperf"] or bool(value["compare_ref"]),
            "updating": value["update_baseline"],
            "baseline_dir": root / value["baseline_dir"],  # an absolute one stays absolute
            "baseline_dir_given": config.getoption("kerasperf_baseline_dir") is not None,
            "json_path": path["json"],
            "markdown_path": path["markdown"],
            "profile_dir": profile_dir,
            "requirements": value["requirements"] or None,
            "compare_ref": value["compare_ref"] or None,
            "compare_repo": cwd / value["compare_repo"] if value["compare_repo"] else None,
            "instructions_rounds": max(1, value["instructions_rounds"]),
            "tables": tuple(config.getini(TABLES_INI)),
            "index_out": path["index_out"],
            "changed": path["changed"],
        }
    )
