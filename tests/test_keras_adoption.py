"""pytest-kerasperf adopted in keras-team/keras (adoption/, docs/keras-adoption.md).

- the pull request's files: one perf test module under keras/ (a ``*_test.py``, so
  Keras's pip_build.py never ships it), Keras-formatted Python, the workflows
  zizmor-clean and shaped as Keras's CI, the comment bot identical to ours, the
  re-baseline scripts ours with Keras's baseline directory;
- the generated requirements-kerasperf.txt and the pyproject.toml edit
  (idempotent; a file without [tool.pytest.ini_options] refused in one line);
- the script end to end: a Keras tree built from the installed keras, every
  variant of Keras's CPU matrix recorded and gated green, each variant's
  baselines under benchmarks/kerasperf/baselines/<backend>/<variant>/.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adoption import apply

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "adoption" / "keras"
OURS = ROOT / ".github"
KERAS_GITHUB = TEMPLATES / ".github"

#: What each variant needs installed, besides keras.
FRAMEWORKS = {
    "numpy": ("numpy",),
    "jax": ("jax",),
    "jax-nnx": ("jax", "flax"),
    "torch": ("torch",),
    "tensorflow": ("tensorflow",),
    "openvino": ("openvino",),
}
#: Keras's pyproject.toml [tool.pytest.ini_options], between its neighbours.
KERAS_PYPROJECT = (
    '[tool.ruff.lint.isort]\nforce-single-line = true\nknown-first-party = ["keras"]\n\n'
    + apply.KERAS_PYTEST_INI
    + '\n[tool.coverage.report]\nexclude_lines = [\n    "pragma: no cover",\n]\n'
)


def _tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


# --- the pull request's files -------------------------------------------------------------------


def test_the_only_file_under_keras_is_the_perf_test_module() -> None:
    under_keras = [p for p in apply.template_files() if p.parts[0] == "keras"]
    assert [p.as_posix() for p in under_keras] == [apply.PERF_TEST]
    assert under_keras[0].name.endswith("_test.py")  # pip_build.py leaves *_test.py out


def test_the_perf_tests_skip_without_the_plugin_and_use_its_fixtures() -> None:
    source = (TEMPLATES / apply.PERF_TEST).read_text()
    module = ast.parse(source)
    first = next(n for n in module.body if not isinstance(n, ast.Expr | ast.Import))
    segment = ast.get_source_segment(source, first) or ""
    assert segment.startswith('pytest_kerasperf = pytest.importorskip(\n    "pytest_kerasperf",')
    tests = {
        n.name: [a.arg for a in n.args.args] for n in module.body if isinstance(n, ast.FunctionDef)
    }
    assert tests == {
        "test_cnn_forward": ["kerasperf", "kerasperf_cnn", "kerasperf_cnn_input"],
        "test_lm_forward": ["kerasperf", "kerasperf_lm", "kerasperf_lm_prompt"],
        "test_lm_generate_32": ["kerasperf", "kerasperf_lm", "kerasperf_lm_prompt"],
    }


def test_python_files_follow_kerass_ruff_configuration() -> None:
    ruff = _tool("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    files = [str(TEMPLATES / p) for p in apply.template_files() if p.suffix == ".py"]
    # Keras's pyproject.toml: line length 80, E F I S101, one import per line.
    keras = ["--isolated", "--line-length", "80"]
    check = subprocess.run(
        [ruff, "check", *keras, "--select", "E,F,I,S101", "--ignore", "E722,E741,E731",
         "--config", "lint.isort.force-single-line=true",
         "--config", 'lint.isort.known-first-party=["keras"]', *files],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    formatted = subprocess.run(
        [ruff, "format", "--check", *keras, *files], capture_output=True, text=True, check=False
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_zizmor_reports_no_findings_on_the_keras_workflows() -> None:
    zizmor = _tool("zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (pip install zizmor)")
    proc = subprocess.run(
        [zizmor, "--offline", "--no-progress", str(KERAS_GITHUB)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings" in proc.stdout + proc.stderr


def test_workflow_pins_permissions_and_scripts() -> None:
    """As tests/test_workflows.py asks of ours: least privilege, SHA pins, no templates in code."""
    for path in sorted((KERAS_GITHUB / "workflows").glob("*.yml")):
        document = _workflow(path.name)
        assert document["permissions"] == {}, path.name
        for name, job in document["jobs"].items():
            assert "permissions" in job, f"{path.name}: job {name}"
            for step in job.get("steps", []):
                uses = step.get("uses", "")
                if uses:
                    assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", uses), uses
                if uses.startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False
                code = step.get("run", "") + step.get("with", {}).get("script", "")
                assert "${{" not in code, f"{path.name}: job {name}: template in a script"


def test_the_comment_bot_is_ours() -> None:
    for relative in ("workflows/kerasperf-comment.yml", "scripts/kerasperf-comment.js"):
        assert (KERAS_GITHUB / relative).read_bytes() == (OURS / relative).read_bytes(), relative


def test_the_rebaseline_scripts_are_ours_with_kerass_baseline_directory() -> None:
    ours = (OURS / "scripts" / "rebaseline-pr.sh").read_text()
    keras = (KERAS_GITHUB / "scripts" / "kerasperf-rebaseline-pr.sh").read_text()
    assert keras == ours.replace("baselines/", f"{apply.BASELINE_DIR}/")

    # The merge script: our functions, formatted for Keras (80 columns).
    def functions(path: Path) -> list[str]:
        tree = ast.parse(path.read_text())
        return [ast.dump(n) for n in tree.body if isinstance(n, ast.FunctionDef)]

    assert functions(KERAS_GITHUB / "scripts" / "kerasperf_merge_baselines.py") == functions(
        OURS / "scripts" / "merge_baselines.py"
    )


def _workflow(name: str) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    document: dict[Any, Any] = yaml.safe_load((KERAS_GITHUB / "workflows" / name).read_text())
    if True in document:  # YAML 1.1 reads the key `on` as a boolean
        document["on"] = document.pop(True)
    return document


def test_the_cpu_gate_is_kerass_cpu_matrix() -> None:
    gate = _workflow("kerasperf.yml")
    job = gate["jobs"]["perf_cpu"]
    assert job["strategy"]["matrix"] == {
        "backend": ["tensorflow", "jax", "torch", "numpy", "openvino"],
        "nnx_enabled": [False],
        "include": [{"backend": "jax", "nnx_enabled": True}],
    }
    assert job["container"] == {"image": "python:3.11-slim"}
    assert job["env"]["KERAS_HOME"] == ".github/workflows/config/${{ matrix.backend }}"
    assert job["env"]["PYTHONHASHSEED"] == "0"
    runs = [step.get("run", "") for step in job["steps"]]
    assert "pip install -r requirements-kerasperf.txt\npip install --no-deps -e .\n" in runs
    gate_run = next(run for run in runs if f"pytest {apply.PERF_TEST}" in run)
    assert (
        f"pytest {apply.PERF_TEST} --pyargs {apply.CENSUS} -n 2 --dist loadfile --kerasperf "
        '--kerasperf-strict --kerasperf-json "$RESULTS" "$select"' in gate_run
    )
    # A pull request runs the perf tests its change can move, by the index of the last run
    # on master (kept in the cache by pushes and the schedule); those run every test.
    assert '"$EVENT" = pull_request' in gate_run
    assert 'select="--kerasperf-changed=kerasperf-index.json"' in gate_run
    assert 'select="--kerasperf-index-out=kerasperf-index.json"' in gate_run
    cached = {
        s["uses"].split("@")[0]: s for s in job["steps"] if "actions/cache" in s.get("uses", "")
    }
    assert cached["actions/cache/restore"]["if"] == "${{ github.event_name == 'pull_request' }}"
    assert cached["actions/cache/save"]["with"]["key"].endswith("-${{ github.sha }}")
    assert "schedule" in gate["on"]
    report_steps = gate["jobs"]["report"]["steps"]
    report = "\n".join(step.get("run", "") for step in report_steps)
    assert "--expect torch jax jax-nnx tensorflow numpy openvino" in report
    # The perf coverage of the diff: the merge commit against its base, git installed first.
    assert "--coverage HEAD^1..HEAD --repo ." in report
    checkout = next(s for s in report_steps if "actions/checkout" in s.get("uses", ""))
    assert checkout["with"]["fetch-depth"] == 2
    assert report.index("apt-get -y install git") < report.index("kerasperf report")
    # The comment workflow follows the gate by its name.
    comment = _workflow("kerasperf-comment.yml")
    assert comment["on"]["workflow_run"]["workflows"] == [gate["name"]]


def test_the_gpu_gate_is_shaped_as_kerass_gpu_tests() -> None:
    inputs = _workflow("kerasperf-gpu.yml")["on"]["workflow_dispatch"]["inputs"]
    assert inputs["runner"]["default"] == "linux-x86-g2-16-l4-1gpu"
    assert inputs["container"]["default"] == "python:3.11-slim"
    job = _workflow("kerasperf-gpu.yml")["jobs"]["perf_gpu"]
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "-n 2" not in runs  # pytest-benchmark times nothing under xdist


def test_the_rebaseline_workflow_records_every_variant_and_proposes() -> None:
    rebaseline = _workflow("kerasperf-rebaseline.yml")
    assert (
        rebaseline["jobs"]["record_cpu"]["strategy"]["matrix"]
        == (_workflow("kerasperf.yml")["jobs"]["perf_cpu"]["strategy"]["matrix"])
    )
    runs = "\n".join(
        step.get("run", "") for job in rebaseline["jobs"].values() for step in job["steps"]
    )
    assert "--kerasperf-update-baseline" in runs
    # The CPU record jobs re-record the census too (there are no GPU census baselines).
    record = "\n".join(s.get("run", "") for s in rebaseline["jobs"]["record_cpu"]["steps"])
    assert f"pytest {apply.PERF_TEST} --pyargs {apply.CENSUS} -n 2 --dist loadfile" in record
    assert f"kerasperf_merge_baselines.py {apply.BASELINE_DIR} " in runs
    assert "kerasperf-rebaseline-pr.sh" in runs


# --- the generated files ------------------------------------------------------------------------


def test_requirements_pin_the_perf_environment_without_keras() -> None:
    version = apply.plugin_version()
    text = apply.requirements_text(ROOT / "requirements" / "perf.txt", version)
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    pins = {line.split("==")[0]: line for line in lines if "==" in line}
    assert "keras" not in pins
    assert pins["pytest-kerasperf"] == f"pytest-kerasperf=={version}"
    ours = (ROOT / "requirements" / "perf.txt").read_text().splitlines()
    expected = {line for line in ours if "==" in line and not line.startswith(("#", "keras=="))}
    assert expected <= set(lines)
    assert f"--extra-index-url {apply.TORCH_CPU_INDEX}" in lines  # torch==...+cpu installs


def test_the_ini_lines_are_added_at_the_end_of_the_pytest_table() -> None:
    edited = apply.add_ini_lines(KERAS_PYPROJECT)
    added = [line for line in edited.splitlines() if line not in KERAS_PYPROJECT.splitlines()]
    assert added == [
        'kerasperf_baseline_dir = "benchmarks/kerasperf/baselines"',
        'kerasperf_requirements = "requirements-kerasperf.txt"',
        'kerasperf_ratchet = "true"',
    ]
    assert edited.replace("\n".join(added) + "\n", "") == KERAS_PYPROJECT
    assert edited.index("kerasperf_ratchet") < edited.index("[tool.coverage.report]")
    assert edited.index('norecursedirs = ["build"]') < edited.index("kerasperf_baseline_dir")


def test_the_ini_edit_is_idempotent() -> None:
    once = apply.add_ini_lines(KERAS_PYPROJECT)
    assert apply.add_ini_lines(once) == once


def test_a_pyproject_without_the_pytest_table_is_refused_in_one_line() -> None:
    with pytest.raises(apply.AdoptionError) as error:
        apply.add_ini_lines('[project]\nname = "keras"\n', "keras/pyproject.toml")
    assert str(error.value) == (
        "keras/pyproject.toml: no [tool.pytest.ini_options] table (Keras's pytest settings) "
        "to add the kerasperf lines to"
    )
    assert "\n" not in str(error.value)


def test_another_baseline_directory_is_refused() -> None:
    other = KERAS_PYPROJECT.replace(
        'addopts = "-vv"', 'addopts = "-vv"\nkerasperf_baseline_dir = "b"'
    )
    with pytest.raises(apply.AdoptionError, match="sets kerasperf_baseline_dir = 'b'"):
        apply.add_ini_lines(other)


def test_the_command_refuses_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert apply.main([str(tmp_path / "missing")]) == 2
    assert (
        capsys.readouterr().err == f"apply.py: error: {tmp_path / 'missing'}: no such directory\n"
    )
    assert apply.main([str(tmp_path)]) == 2
    assert "not a Keras checkout" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_status:
        apply.main(["--variants", "mlx"])
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("apply.py: error: argument --variants: invalid choice: 'mlx'")
    assert err.count("\n") == 1


# --- end to end ---------------------------------------------------------------------------------


def _missing(variant: str) -> list[str]:
    return [m for m in ("keras", *FRAMEWORKS[variant]) if importlib.util.find_spec(m) is None]


@pytest.mark.parametrize("variant", apply.VARIANT_NAMES)
def test_a_variant_records_and_gates_green_in_a_tree_from_the_installed_keras(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = _missing(variant)
    if missing:
        reason = f"{variant} needs {', '.join(missing)}, not installed here"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI installs the pinned set: the install is broken)")
        pytest.skip(reason)
    tree, report_dir = tmp_path / "keras", tmp_path / "report"
    status = apply.main(
        [
            "--from-installed",
            str(tree),
            "--variants",
            variant,
            "-k",
            "cnn_forward",
            "--module-backends",  # none: such a tree has no Keras conftest.py
            "--report",
            str(report_dir),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out[-6000:]
    report = json.loads((report_dir / "adoption-report.json").read_text())
    assert report["green"] is True
    (result,) = report["variants"]
    backend = result["backend"]
    python = f"py{sys.version_info.major}.{sys.version_info.minor}"
    expected = f"{python}-cpu-nnx" if variant == "jax-nnx" else f"{python}-cpu"
    modes = ("eager",) if backend in ("numpy", "openvino") else ("compiled", "eager")
    assert result["green"] is True, result["problems"]
    assert result["baseline_variant"] == expected
    assert result["measured"] == result["compared"] == len(modes)
    assert result["update"]["exit_code"] == result["gate"]["exit_code"] == 0
    directory = f"{apply.BASELINE_DIR}/{backend}/{expected}/model_perf_test.py"
    assert sorted(result["baseline_files"]) == [
        f"{directory}/test_cnn_forward[{mode}].json" for mode in modes
    ]
    for path in result["baseline_files"]:
        assert (tree / path).is_file()
    assert report["report_step"]["exit_code"] == 0
    # Where the plugin is not installed (Keras's regular CI) the module skips itself.
    assert report["without_plugin"]["green"] is True
    assert "the perf tests need pytest-kerasperf" in report["without_plugin"]["summary"]
