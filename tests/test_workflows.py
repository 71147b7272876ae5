"""The GitHub workflows and their scripts (.github/): zizmor, the comment bot, pins, re-baselining.

- zizmor (the audit Keras runs on every pull request) reports nothing on .github/;
- the comment bot (.github/scripts/kerasperf-comment.js) runs under node against a fake
  GitHub client: which pull request it picks, which comment it edits, what it refuses and
  how it caps the body are asserted on the API calls it makes;
- every action is pinned to a full commit SHA with its version in a comment, and every
  checkout drops its credentials;
- the re-baseline loop's merge and pull-request scripts, against local git repositories.

docs/github.md describes the workflows and the comment bot's threat model.
"""

from __future__ import annotations

import fnmatch
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inner import Inner
from tests.test_untrusted import failing_results

ROOT = Path(__file__).resolve().parent.parent
GITHUB_DIR = ROOT / ".github"
WORKFLOWS = sorted((GITHUB_DIR / "workflows").glob("*.yml"))
COMMENT_SCRIPT = GITHUB_DIR / "scripts" / "kerasperf-comment.js"
MERGE_SCRIPT = GITHUB_DIR / "scripts" / "merge_baselines.py"
PR_SCRIPT = GITHUB_DIR / "scripts" / "rebaseline-pr.sh"

MARKER = "<!-- kerasperf-report -->"
GITHUB_COMMENT_LIMIT = 65_536
BASE_REPO = "keras-team/keras"
BASE_ID = 1001
FORK_REPO = "alice/keras"
FORK_ID = 2002
SHA = "a" * 40
NEW_SHA = "b" * 40
RUN_URL = "https://github.com/keras-team/keras/actions/runs/42"
WRITES = ("issues.createComment", "issues.updateComment")

Json = dict[str, Any]


# --- zizmor ------------------------------------------------------------------------------------


def _zizmor() -> str | None:
    beside = Path(sys.executable).parent / "zizmor"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("zizmor")


def test_zizmor_reports_no_findings() -> None:
    zizmor = _zizmor()
    if zizmor is None:
        pytest.skip("zizmor is not installed (pip install zizmor)")
    done = subprocess.run(
        [zizmor, "--offline", "--strict-collection", "--no-progress", str(GITHUB_DIR)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "No findings to report" in output, output


# --- pins --------------------------------------------------------------------------------------

USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<rest>.*)$")
PINNED = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}")
VERSION_COMMENT = re.compile(r"#\s*v\d+\.\d+\.\d+\b")


def test_workflows_exist() -> None:
    names = {path.name for path in WORKFLOWS}
    assert {
        "kerasperf.yml",
        "kerasperf-comment.yml",
        "kerasperf-gpu.yml",
        "kerasperf-rebaseline.yml",
        "kerasperf-sweep.yml",
    } <= names


def test_every_action_is_pinned_to_a_commit_with_its_version() -> None:
    seen = 0
    for path in WORKFLOWS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = USES_LINE.match(line)
            if match is None:
                continue
            ref = match["ref"].strip("'\"")
            if ref.startswith("./"):
                continue  # a workflow or action of this repository
            seen += 1
            where = f"{path.name}:{number}: {line.strip()}"
            assert PINNED.fullmatch(ref), f"not pinned to a 40-hex commit SHA: {where}"
            assert VERSION_COMMENT.search(match["rest"]), f"no '# vX.Y.Z' comment: {where}"
    assert seen > 0


def test_every_checkout_drops_its_credentials() -> None:
    for path in WORKFLOWS:
        text = path.read_text(encoding="utf-8")
        checkouts = len(re.findall(r"uses:\s*actions/checkout@", text))
        dropped = len(re.findall(r"^\s*persist-credentials:\s*false\s*$", text, re.MULTILINE))
        assert checkouts == dropped, (
            f"{path.name}: {checkouts} checkouts, {dropped} without credentials"
        )


def _steps(document: Json) -> Iterator[tuple[str, Json]]:
    for name, job in (document.get("jobs") or {}).items():
        for step in job.get("steps") or []:
            yield name, step


def test_workflow_yaml_pins_and_permissions() -> None:
    yaml = pytest.importorskip("yaml")
    for path in WORKFLOWS:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert isinstance(document, dict), path.name
        # Least privilege: nothing at the top, each job says what it needs.
        assert document.get("permissions") == {}, f"{path.name}: top-level permissions"
        for name, job in document["jobs"].items():
            assert "permissions" in job, f"{path.name}: job {name} has no permissions"
            if "uses" in job:
                assert PINNED.fullmatch(job["uses"]) or job["uses"].startswith("./")
        for name, step in _steps(document):
            uses = step.get("uses")
            if uses is None:
                continue
            assert PINNED.fullmatch(uses), f"{path.name}: job {name}: {uses}"
            if uses.startswith("actions/checkout@"):
                assert (step.get("with") or {}).get("persist-credentials") is False
        for name, step in _steps(document):
            # Values reach scripts through env:, never as templates expanded into the code.
            code = step.get("run", "") + (step.get("with") or {}).get("script", "")
            assert "${{" not in code, f"{path.name}: job {name}: template in a script"


def test_only_the_rebaseline_proposal_may_write_contents() -> None:
    yaml = pytest.importorskip("yaml")
    writers: dict[str, set[str]] = {}
    for path in WORKFLOWS:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for name, job in document["jobs"].items():
            for scope, level in (job.get("permissions") or {}).items():
                if level == "write":
                    writers.setdefault(f"{path.name}:{name}", set()).add(scope)
    assert writers == {
        "kerasperf-comment.yml:comment": {"pull-requests"},
        "kerasperf-rebaseline.yml:propose": {"contents", "pull-requests"},
    }


# --- the comment bot under node ----------------------------------------------------------------

HARNESS = r"""
'use strict';
const fs = require('fs');
const [scriptPath, scenarioPath] = process.argv.slice(2);
const sc = JSON.parse(fs.readFileSync(scenarioPath, 'utf8'));
const calls = [];
const logs = [];
let nextId = 9000;
const record = (name, params) => calls.push({ name, params });
const notFound = () => Object.assign(new Error('Not Found'), { status: 404 });
const rest = {
  pulls: {
    get: async (p) => {
      record('pulls.get', p);
      // `current`: the pull requests as they are when fetched one by one, if they moved.
      const pr = (sc.current || sc.pulls).find((x) => x.number === p.pull_number);
      if (!pr) throw notFound();
      return { data: pr };
    },
    list: async (p) => {
      record('pulls.list', p);
      const wanted = (x) =>
        (!p.state || p.state === 'all' || x.state === p.state) &&
        (!p.head || x.head.label === p.head);
      return { data: sc.pulls.filter(wanted) };
    },
  },
  repos: {
    listPullRequestsAssociatedWithCommit: async (p) => {
      record('repos.listPullRequestsAssociatedWithCommit', p);
      return { data: sc.pulls.filter((x) => (x.commits || [x.head.sha]).includes(p.commit_sha)) };
    },
  },
  issues: {
    listComments: async (p) => {
      record('issues.listComments', p);
      return { data: sc.comments.filter((c) => c.issue === p.issue_number) };
    },
    createComment: async (p) => {
      record('issues.createComment', p);
      return { data: { id: nextId++ } };
    },
    updateComment: async (p) => {
      record('issues.updateComment', p);
      return { data: { id: p.comment_id } };
    },
  },
  actions: {
    listWorkflowRunArtifacts: async (p) => {
      record('actions.listWorkflowRunArtifacts', p);
      const artifacts = sc.artifacts.filter((a) => !p.name || a.name === p.name);
      return { data: { total_count: artifacts.length, artifacts } };
    },
    downloadArtifact: async (p) => {
      record('actions.downloadArtifact', p);
      const artifact = sc.artifacts.find((a) => a.id === p.artifact_id);
      if (!artifact) throw notFound();
      const bytes = fs.readFileSync(artifact.zip);
      // Octokit hands the zip over as an ArrayBuffer.
      return { data: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) };
    },
  },
};
const github = { rest, paginate: async (method, params) => (await method(params)).data };
const core = {
  info: (m) => logs.push(String(m)),
  warning: (m) => logs.push('warning: ' + m),
  debug: () => {},
  setFailed: (m) => logs.push('failed: ' + m),
};
const context = { payload: sc.payload, repo: { owner: 'keras-team', repo: 'keras' } };
const run = require(scriptPath);
run({ github, context, core, command: sc.command })
  .then((result) => process.stdout.write(JSON.stringify({ result, calls, logs })))
  .catch((error) => { console.error(error && error.stack || error); process.exit(3); });
"""


def _node() -> str:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed (the comment bot is JavaScript)")
    return node


def _repo(full_name: str, repo_id: int) -> Json:
    return {
        "id": repo_id,
        "full_name": full_name,
        "name": "keras",
        "owner": {"login": full_name.split("/")[0]},
    }


def _pr(
    number: int,
    head_repo: str,
    repo_id: int,
    sha: str,
    branch: str = "fix-perf",
    state: str = "open",
) -> Json:
    return {
        "number": number,
        "state": state,
        "head": {
            "sha": sha,
            "ref": branch,
            "label": f"{head_repo.split('/')[0]}:{branch}",
            "repo": _repo(head_repo, repo_id),
        },
        "base": {"ref": "master", "repo": _repo(BASE_REPO, BASE_ID)},
    }


def _listed(number: int, head_id: int, sha: str = SHA, branch: str = "fix-perf") -> Json:
    """A pull request as workflow_run.pull_requests lists it."""
    return {
        "number": number,
        "head": {"ref": branch, "sha": sha, "repo": {"id": head_id, "name": "keras"}},
        "base": {"ref": "master", "sha": "c" * 40, "repo": {"id": BASE_ID, "name": "keras"}},
    }


def _payload(
    head_repo: str = BASE_REPO,
    head_id: int = BASE_ID,
    *,
    sha: str = SHA,
    branch: str = "fix-perf",
    listed: list[Json] | None = None,
    event: str = "pull_request",
) -> Json:
    return {
        "action": "completed",
        "repository": _repo(BASE_REPO, BASE_ID),
        "workflow_run": {
            "id": 42,
            "name": "kerasperf",
            "event": event,
            "conclusion": "failure",
            "head_sha": sha,
            "head_branch": branch,
            "html_url": RUN_URL,
            "head_repository": _repo(head_repo, head_id),
            "repository": _repo(BASE_REPO, BASE_ID),
            "pull_requests": listed or [],
        },
    }


def _report(rows: int = 3) -> str:
    lines = [
        MARKER,
        "### kerasperf (torch)",
        "",
        "**kerasperf:** ❌ 1 regression · 2 unchanged",
        "",
    ]
    lines += ["| backend | test | mode | calls (Δ) |", "|---|---|---|---|"]
    lines += [f"| torch | `test_lm_forward[{i}]` | eager | 16,012 (+12) |" for i in range(rows)]
    return "\n".join(lines) + "\n"


def _zip(path: Path, files: dict[str, str], *, streamed: bool = False) -> Path:
    """A zip as actions/upload-artifact writes one (streamed: sizes in data descriptors)."""
    if streamed:
        buffer = io.BytesIO()

        class Unseekable(io.RawIOBase):
            def writable(self) -> bool:
                return True

            def write(self, data: Any) -> int:
                return buffer.write(bytes(data))

        with zipfile.ZipFile(Unseekable(), "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in files.items():
                archive.writestr(name, text)
        path.write_bytes(buffer.getvalue())
    else:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in files.items():
                archive.writestr(name, text)
    return path


#: ``kerasperf report`` as the bot runs it, faked: writes the Markdown given to --markdown.
FAKE_KERASPERF = """
import json, shutil, sys
rendered, *args = sys.argv[1:]
assert args[0] == "report", args
shutil.copyfile(rendered, args[args.index("--markdown") + 1])
with open(rendered + ".args", "w") as out:
    json.dump(args, out)
sys.exit(1)
"""


def _artifact(
    tmp_path: Path,
    report: str,
    results: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
) -> list[Json]:
    """The artifact of a run: results files (``report`` is what rendering them gives)."""
    (tmp_path / "rendered.md").write_text(report, encoding="utf-8")
    files = {"kerasperf-results-numpy.json": "{}"} if results is None else results
    archive = _zip(tmp_path / "kerasperf-report.zip", {**files, **(extra or {})}, streamed=True)
    return [
        {
            "id": 77,
            "name": "kerasperf-report",
            "size_in_bytes": archive.stat().st_size,
            "expired": False,
            "zip": str(archive),
        }
    ]


def _bot(
    comment_id: int,
    body: str,
    issue: int = 7,
    login: str = "github-actions[bot]",
    kind: str = "Bot",
) -> Json:
    return {"id": comment_id, "issue": issue, "body": body, "user": {"login": login, "type": kind}}


def _run_bot(tmp_path: Path, scenario: Json, workspace: Path | None = None) -> Json:
    node = _node()
    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS, encoding="utf-8")
    scenario_file = tmp_path / "scenario.json"
    scenario.setdefault("comments", [])
    if "command" not in scenario:
        fake = tmp_path / "fake_kerasperf.py"
        fake.write_text(FAKE_KERASPERF, encoding="utf-8")
        scenario["command"] = [sys.executable, str(fake), str(tmp_path / "rendered.md")]
    scenario_file.write_text(json.dumps(scenario), encoding="utf-8")
    done = subprocess.run(
        [node, str(harness), str(COMMENT_SCRIPT), str(scenario_file)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **{k: v for k, v in os.environ.items() if k != "GITHUB_WORKSPACE"},
            "KERASPERF_COMMENT_AUTHOR": "",
            **({"GITHUB_WORKSPACE": str(workspace)} if workspace else {}),
        },
    )
    assert done.returncode == 0, done.stderr
    out: Json = json.loads(done.stdout)
    return out


def _names(out: Json) -> list[str]:
    return [call["name"] for call in out["calls"]]


def _writes(out: Json) -> list[Json]:
    return [call for call in out["calls"] if call["name"] in WRITES]


def test_same_repository_pull_request_from_the_event(tmp_path: Path) -> None:
    scenario: Json = {
        "payload": _payload(listed=[_listed(7, BASE_ID)]),
        "pulls": [_pr(7, BASE_REPO, BASE_ID, SHA)],
        # The artifact names another pull request: ignored.
        "artifacts": _artifact(tmp_path, _report(), extra={"pr-number.txt": "99\n"}),
    }
    out = _run_bot(tmp_path, scenario)
    assert out["result"]["action"] == "created"
    (write,) = _writes(out)
    assert write["name"] == "issues.createComment"
    assert write["params"]["issue_number"] == 7
    assert (write["params"]["owner"], write["params"]["repo"]) == ("keras-team", "keras")
    body: str = write["params"]["body"]
    assert body.splitlines()[:3] == [
        MARKER,
        f"<!-- kerasperf-sha: {SHA} -->",
        "### kerasperf (torch)",
    ]
    assert body.count(MARKER) == 1
    assert "`test_lm_forward[2]`" in body
    names = _names(out)
    assert "pulls.list" not in names  # taken from the event
    assert not any(call["params"].get("issue_number") == 99 for call in out["calls"])
    listed = next(c for c in out["calls"] if c["name"] == "actions.listWorkflowRunArtifacts")
    assert listed["params"]["run_id"] == 42
    # The head is checked right before writing.
    assert names.index("pulls.get") > names.index("issues.listComments")
    assert names.index("pulls.get") < names.index("issues.createComment")


def test_fork_pull_request_found_by_head_sha_and_head_repository(tmp_path: Path) -> None:
    scenario: Json = {
        # GitHub may list a base-repository pull request whose branch has the fork's
        # branch name: not the run's, left out.
        "payload": _payload(FORK_REPO, FORK_ID, listed=[_listed(3, BASE_ID)]),
        "pulls": [
            _pr(3, BASE_REPO, BASE_ID, NEW_SHA),  # same branch name, base repository
            _pr(11, "bob/keras", 3003, SHA),  # same commit, another fork
            _pr(12, FORK_REPO, FORK_ID, SHA),
            _pr(10, FORK_REPO, FORK_ID, SHA, branch="old", state="closed"),
        ],
        "artifacts": _artifact(tmp_path, _report()),
    }
    out = _run_bot(tmp_path, scenario)
    assert out["result"] == {"action": "created", "number": 12, "comment": 9000}
    (write,) = _writes(out)
    assert write["params"]["issue_number"] == 12
    listed = next(c for c in out["calls"] if c["name"] == "pulls.list")
    assert listed["params"]["head"] == "alice:fix-perf"
    assert listed["params"]["state"] == "open"


@pytest.mark.parametrize("fork", [False, True], ids=["same-repository", "fork"])
def test_stale_run_writes_nothing(tmp_path: Path, fork: bool) -> None:
    """The pull request's head moved on: an older run never overwrites a newer report."""
    head_repo, head_id = (FORK_REPO, FORK_ID) if fork else (BASE_REPO, BASE_ID)
    scenario: Json = {
        "payload": _payload(head_repo, head_id, listed=None if fork else [_listed(7, BASE_ID)]),
        "pulls": [{**_pr(7, head_repo, head_id, NEW_SHA), "commits": [SHA, NEW_SHA]}],
        "comments": [_bot(500, MARKER + "\nnewer report")],
        "artifacts": _artifact(tmp_path, _report()),
    }
    out = _run_bot(tmp_path, scenario)
    assert _writes(out) == []
    assert out["result"]["action"] == "skipped"
    assert "stale run" in out["result"]["reason"]
    assert any("stale run" in line for line in out["logs"])


def test_head_moves_while_the_bot_runs(tmp_path: Path) -> None:
    """Found at the run's head, but the pull request's head is another commit at write time."""
    scenario: Json = {
        "payload": _payload(FORK_REPO, FORK_ID),
        "pulls": [_pr(12, FORK_REPO, FORK_ID, SHA)],
        "current": [_pr(12, FORK_REPO, FORK_ID, NEW_SHA)],
        "artifacts": _artifact(tmp_path, _report()),
    }
    out = _run_bot(tmp_path, scenario)
    assert _writes(out) == []
    assert "stale run" in out["result"]["reason"]
    assert "issues.listComments" in _names(out)  # it got as far as writing


def test_marker_comment_of_another_user_is_not_edited(tmp_path: Path) -> None:
    scenario: Json = {
        "payload": _payload(listed=[_listed(7, BASE_ID)]),
        "pulls": [_pr(7, BASE_REPO, BASE_ID, SHA)],
        "comments": [
            _bot(300, MARKER + "\nfake report", login="mallory", kind="User"),
            _bot(301, MARKER + "\nfake report", login="github-actions", kind="User"),
            _bot(302, "thanks!", login="github-actions[bot]"),  # the bot's, no marker
            _bot(303, MARKER + "\nother PR", issue=8),
        ],
        "artifacts": _artifact(tmp_path, _report()),
    }
    out = _run_bot(tmp_path, scenario)
    (write,) = _writes(out)
    assert write["name"] == "issues.createComment"
    assert write["params"]["issue_number"] == 7
    assert "issues.updateComment" not in _names(out)


def test_the_bots_own_comment_is_updated(tmp_path: Path) -> None:
    scenario: Json = {
        "payload": _payload(listed=[_listed(7, BASE_ID)]),
        "pulls": [_pr(7, BASE_REPO, BASE_ID, SHA)],
        "comments": [
            _bot(300, MARKER + "\nfake report", login="mallory", kind="User"),
            _bot(400, f"{MARKER}\n<!-- kerasperf-sha: {'d' * 40} -->\nold report"),
        ],
        "artifacts": _artifact(tmp_path, _report()),
    }
    out = _run_bot(tmp_path, scenario)
    (write,) = _writes(out)
    assert write["name"] == "issues.updateComment"
    assert write["params"]["comment_id"] == 400
    assert write["params"]["body"].startswith(f"{MARKER}\n<!-- kerasperf-sha: {SHA} -->\n")
    assert out["result"] == {"action": "updated", "number": 7, "comment": 400}


def test_a_one_megabyte_report_is_cut_under_githubs_limit(tmp_path: Path) -> None:
    report = _report(rows=20_000)
    assert len(report) > 1_000_000
    scenario: Json = {
        "payload": _payload(listed=[_listed(7, BASE_ID)]),
        "pulls": [_pr(7, BASE_REPO, BASE_ID, SHA)],
        "artifacts": _artifact(tmp_path, report.replace("\n\n|", "\n\n<details>\n\n|", 1)),
    }
    out = _run_bot(tmp_path, scenario)
    (write,) = _writes(out)
    body: str = write["params"]["body"]
    assert len(body) < GITHUB_COMMENT_LIMIT
    assert len(body) > 50_000  # cut, not dropped
    lines = body.splitlines()
    assert lines[0] == MARKER
    assert lines[1] == f"<!-- kerasperf-sha: {SHA} -->"
    assert body.count(MARKER) == 1
    assert "</details>" in body  # the folded table is closed before the note
    assert lines[-1].endswith(f"[the workflow run]({RUN_URL}).")
    assert "kerasperf-report" in lines[-1]
    kept = [line for line in lines if line.startswith("| torch |")]
    assert all(line.endswith("|") for line in kept)  # cut at a line boundary


@pytest.mark.parametrize("case", ["no pull request", "two in the event", "two by head", "closed"])
def test_not_exactly_one_open_pull_request_writes_nothing(tmp_path: Path, case: str) -> None:
    pulls: list[Json]
    listed: list[Json] | None = None
    head_repo, head_id = FORK_REPO, FORK_ID
    if case == "no pull request":
        pulls = [_pr(5, "bob/keras", 3003, SHA)]
    elif case == "two in the event":
        head_repo, head_id = BASE_REPO, BASE_ID
        listed = [_listed(7, BASE_ID), _listed(8, BASE_ID)]
        pulls = [_pr(7, BASE_REPO, BASE_ID, SHA), _pr(8, BASE_REPO, BASE_ID, SHA)]
    elif case == "two by head":
        pulls = [_pr(12, FORK_REPO, FORK_ID, SHA), _pr(13, FORK_REPO, FORK_ID, SHA)]
    else:
        pulls = [_pr(12, FORK_REPO, FORK_ID, SHA, state="closed")]
    scenario: Json = {
        "payload": _payload(head_repo, head_id, listed=listed),
        "pulls": pulls,
        "comments": [_bot(400, MARKER + "\nold", issue=12)],
        "artifacts": _artifact(tmp_path, _report()),
    }
    out = _run_bot(tmp_path, scenario)
    assert _writes(out) == []
    assert out["result"]["action"] == "skipped"
    assert "actions.downloadArtifact" not in _names(out)


@pytest.mark.parametrize("case", ["too large", "17 results files", "not a zip", "push event"])
def test_unusable_input_writes_nothing(tmp_path: Path, case: str) -> None:
    artifacts = _artifact(tmp_path, _report())
    payload = _payload(listed=[_listed(7, BASE_ID)])
    if case == "too large":
        artifacts[0]["size_in_bytes"] = 200 * 1024 * 1024  # over the bot's 128 MiB
    elif case == "17 results files":
        _zip(Path(artifacts[0]["zip"]), {f"kerasperf-results-r{i}.json": "{}" for i in range(17)})
    elif case == "not a zip":
        Path(artifacts[0]["zip"]).write_text(_report(), encoding="utf-8")
    else:
        payload = _payload(event="push")
    scenario: Json = {
        "payload": payload,
        "pulls": [_pr(7, BASE_REPO, BASE_ID, SHA)],
        "artifacts": artifacts,
    }
    out = _run_bot(tmp_path, scenario)
    assert _writes(out) == []
    assert out["result"]["action"] == "skipped"


def test_an_unchanged_report_is_not_rewritten(tmp_path: Path) -> None:
    scenario: Json = {
        "payload": _payload(listed=[_listed(7, BASE_ID)]),
        "pulls": [_pr(7, BASE_REPO, BASE_ID, SHA)],
        "artifacts": _artifact(tmp_path, _report()),
    }
    body = _writes(_run_bot(tmp_path, scenario))[0]["params"]["body"]
    scenario["comments"] = [_bot(400, body)]
    out = _run_bot(tmp_path, scenario)
    assert _writes(out) == []
    assert out["result"]["action"] == "unchanged"


# --- re-baselining -----------------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _merge(*args: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(MERGE_SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


BASE_BASELINES = {
    "jax/py3.11-cpu/a.json": "jax cpu a",
    "jax/py3.11-cpu/gone.json": "jax cpu gone",
    "jax/py3.11-cpu-nnx/a.json": "jax nnx a",
    "torch/py3.11-cpu/a.json": "torch cpu a",
}


def test_merge_baselines_applies_each_jobs_variant(tmp_path: Path) -> None:
    base = _tree(tmp_path / "baselines", BASE_BASELINES)
    # The jax job re-recorded py3.11-cpu (a changed, gone deleted); the jax NNX job
    # re-recorded py3.11-cpu-nnx (a new file); each uploaded the whole of baselines/.
    jax = _tree(
        tmp_path / "kerasperf-baselines-jax",
        {**BASE_BASELINES, "jax/py3.11-cpu/a.json": "jax cpu a2"},
    )
    (jax / "jax/py3.11-cpu/gone.json").unlink()
    nnx = _tree(
        tmp_path / "kerasperf-baselines-jax-nnx",
        {**BASE_BASELINES, "jax/py3.11-cpu-nnx/b.json": "nnx b"},
    )
    # A job whose artifact lacks a whole directory deletes nothing there.
    partial = _tree(
        tmp_path / "kerasperf-baselines-torch", {"torch/py3.11-cpu/a.json": "torch cpu a"}
    )
    done = _merge(base, jax, nnx, partial)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == [
        "M jax/py3.11-cpu/a.json",
        "D jax/py3.11-cpu/gone.json",
        "A jax/py3.11-cpu-nnx/b.json",
    ]
    assert (base / "jax/py3.11-cpu/a.json").read_text(encoding="utf-8") == "jax cpu a2"
    assert not (base / "jax/py3.11-cpu/gone.json").exists()
    assert (base / "jax/py3.11-cpu-nnx/a.json").read_text(encoding="utf-8") == "jax nnx a"
    assert (base / "jax/py3.11-cpu-nnx/b.json").read_text(encoding="utf-8") == "nnx b"
    assert (base / "torch/py3.11-cpu/a.json").read_text(encoding="utf-8") == "torch cpu a"


def test_merge_baselines_refuses_conflicting_jobs(tmp_path: Path) -> None:
    base = _tree(tmp_path / "baselines", BASE_BASELINES)
    one = _tree(tmp_path / "one", {**BASE_BASELINES, "torch/py3.11-cpu/a.json": "one"})
    two = _tree(tmp_path / "two", {**BASE_BASELINES, "torch/py3.11-cpu/a.json": "two"})
    done = _merge(base, one, two)
    assert done.returncode == 1
    assert "torch/py3.11-cpu/a.json" in done.stderr
    assert (base / "torch/py3.11-cpu/a.json").read_text(encoding="utf-8") == "torch cpu a"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


FAKE_GH = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$GH_LOG"
while [ $# -gt 0 ]; do
  if [ "$1" = --body-file ]; then cp "$2" "$GH_BODY"; fi
  shift
done
if [ "$GH_REFUSE" = 1 ]; then
  echo "GitHub Actions is not permitted to create or approve pull requests." >&2
  exit 1
fi
echo https://github.com/keras-team/keras/pull/5
"""


@pytest.fixture
def rebaseline_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None or shutil.which("bash") is None:
        pytest.skip("git and bash are needed")
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(remote))
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "--quiet", "--initial-branch=main")
    _tree(work / "baselines", BASE_BASELINES)
    _git(work, "add", ".")
    _git(work, "commit", "--quiet", "-m", "baselines")
    _git(work, "remote", "add", "origin", str(remote))
    _git(work, "push", "--quiet", "origin", "main")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH, encoding="utf-8")
    (bin_dir / "gh").chmod(0o755)
    return work


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _propose(work: Path, refuse: bool) -> tuple[subprocess.CompletedProcess[str], str, str]:
    tmp = work.parent
    summary, output = tmp / "summary.md", tmp / "output.txt"
    env = {
        **os.environ,
        "PATH": f"{tmp / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "GH_TOKEN": "not-a-token",
        "GH_LOG": str(tmp / "gh.log"),
        "GH_BODY": str(tmp / "gh-body.md"),
        "GH_REFUSE": "1" if refuse else "0",
        "BASE": "main",
        "BRANCH": "kerasperf/rebaseline-42",
        "RUN_URL": RUN_URL,
        "PATCH": str(tmp / "kerasperf-baselines.patch"),
        "JOB_RESULTS": "Record jobs: CPU success, GPU skipped.",
        "GITHUB_REPOSITORY": BASE_REPO,
        "GITHUB_RUN_ID": "42",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
    }
    done = subprocess.run(
        ["bash", str(PR_SCRIPT)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done, _read(summary), _read(output)


def test_rebaseline_without_changes_proposes_nothing(rebaseline_repo: Path) -> None:
    done, summary, output = _propose(rebaseline_repo, refuse=False)
    assert done.returncode == 0, done.stderr
    assert "No baseline moved" in summary
    assert output.strip() == "patch=false"
    assert not (rebaseline_repo.parent / "gh.log").exists()


def test_rebaseline_opens_a_pull_request(rebaseline_repo: Path) -> None:
    (rebaseline_repo / "baselines/torch/py3.11-cpu/a.json").write_text("moved", encoding="utf-8")
    (rebaseline_repo / "baselines/torch/py3.11-cpu/new.json").write_text("new", encoding="utf-8")
    done, summary, output = _propose(rebaseline_repo, refuse=False)
    assert done.returncode == 0, done.stderr
    assert output.strip() == "patch=false"
    assert "https://github.com/keras-team/keras/pull/5" in summary
    remote = rebaseline_repo.parent / "remote.git"
    shown = _git(remote, "show", "--stat", "kerasperf/rebaseline-42")
    assert "kerasperf: re-record baselines" in shown
    assert "baselines/torch/py3.11-cpu/new.json" in shown
    args = (rebaseline_repo.parent / "gh.log").read_text(encoding="utf-8").split("\n")
    assert args[:2] == ["pr", "create"]
    assert args[args.index("--title") + 1] == "kerasperf: re-record baselines"
    assert args[args.index("--head") + 1] == "kerasperf/rebaseline-42"
    assert args[args.index("--base") + 1] == "main"
    body = (rebaseline_repo.parent / "gh-body.md").read_text(encoding="utf-8")
    assert "M\tbaselines/torch/py3.11-cpu/a.json" in body
    assert "A\tbaselines/torch/py3.11-cpu/new.json" in body
    assert RUN_URL in body


def test_rebaseline_leaves_a_patch_when_the_pull_request_is_refused(rebaseline_repo: Path) -> None:
    (rebaseline_repo / "baselines/torch/py3.11-cpu/a.json").write_text("moved", encoding="utf-8")
    (rebaseline_repo / "baselines/jax/py3.11-cpu/gone.json").unlink()
    done, summary, output = _propose(rebaseline_repo, refuse=True)
    assert done.returncode == 0, done.stderr
    assert output.strip() == "patch=true"
    assert "::warning::" in done.stdout
    assert "git apply kerasperf-baselines.patch" in summary
    assert "gh run download 42 --repo keras-team/keras --name kerasperf-rebaseline-patch" in summary
    # The patch applies to a fresh clone of the base branch and reproduces the change.
    clone = rebaseline_repo.parent / "clone"
    _git(
        rebaseline_repo.parent,
        "clone",
        "--quiet",
        str(rebaseline_repo.parent / "remote.git"),
        str(clone),
    )
    _git(clone, "apply", str(rebaseline_repo.parent / "kerasperf-baselines.patch"))
    assert (clone / "baselines/torch/py3.11-cpu/a.json").read_text(encoding="utf-8") == "moved"
    assert not (clone / "baselines/jax/py3.11-cpu/gone.json").exists()


# --- untrusted text in a job's log ---------------------------------------------------------

ADOPTION_WORKFLOWS = sorted((ROOT / "adoption" / "keras" / ".github" / "workflows").glob("*.yml"))
FAKE_REPORT = """#!/usr/bin/env bash
# kerasperf report as a hostile results file would make it print: keys at column 0.
echo "::add-mask::hidden-from-the-log"
echo "::stop-commands::a-guessed-token"
echo "::error file=README.md,line=1::owned"
echo "::guessed-token::"
printf '<!-- kerasperf-report -->\\n' > comment/report.md
exit 1
"""


def _obeyed(log: str) -> list[str]:
    """The lines of ``log`` that GitHub's runner would run as workflow commands."""
    obeyed, stopped = [], None
    for line in log.splitlines():
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        if line.startswith("::"):
            obeyed.append(line)
            if line.startswith("::stop-commands::"):
                stopped = line.removeprefix("::stop-commands::")
    return obeyed


@pytest.mark.parametrize("workflows", [WORKFLOWS, ADOPTION_WORKFLOWS], ids=["ours", "adoption"])
def test_the_report_step_obeys_no_workflow_command_of_the_results(
    tmp_path: Path, workflows: list[Path]
) -> None:
    """The report step prints what results files hold: it runs between ``::stop-commands::``
    with a fresh random token and the token's resume line, so no command in them is obeyed."""
    yaml = pytest.importorskip("yaml")
    [workflow] = [path for path in workflows if path.name == "kerasperf.yml"]
    steps = yaml.safe_load(workflow.read_text(encoding="utf-8"))["jobs"]["report"]["steps"]
    [script] = [step["run"] for step in steps if "kerasperf report" in step.get("run", "")]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kerasperf").write_text(FAKE_REPORT, encoding="utf-8")
    (bin_dir / "kerasperf").chmod(0o755)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "numpy.json").write_text("{}", encoding="utf-8")
    tokens = set()
    for _ in range(2):
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=tmp_path,
            env={
                "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
                "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
                "RUN_URL": RUN_URL,
            },
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 1, done.stderr  # the report's own exit status
        obeyed = _obeyed(done.stdout)
        assert len(obeyed) == 1, obeyed  # the step's own ::stop-commands:: only
        [stop] = obeyed
        token = stop.removeprefix("::stop-commands::")
        assert re.fullmatch(r"[0-9a-f]{32}", token), stop
        assert done.stdout.splitlines()[-1] == f"::{token}::"
        tokens.add(token)
    assert len(tokens) == 2  # a new token each run


# --- concurrency, artifact names, actionlint ---------------------------------------------


@pytest.mark.parametrize("workflows", [WORKFLOWS, ADOPTION_WORKFLOWS], ids=["ours", "adoption"])
def test_the_gate_is_cancelled_only_by_a_newer_run_of_the_same_pull_request(
    workflows: list[Path],
) -> None:
    """Two forks' pull requests from branches of one name (GitHub's default ``patch-1``) must
    not cancel each other's gate: the group is the pull request's number, not its branch."""
    yaml = pytest.importorskip("yaml")
    [workflow] = [path for path in workflows if path.name == "kerasperf.yml"]
    concurrency = yaml.safe_load(workflow.read_text(encoding="utf-8"))["concurrency"]
    assert concurrency["cancel-in-progress"] is True
    group = concurrency["group"]
    assert "github.event.pull_request.number" in group, group
    assert "head_ref" not in group, group
    assert "github.run_id" in group, group  # pushes to main each run to the end


def test_the_gate_runs_kerass_cpu_matrix_with_every_shard_of_torch() -> None:
    """Each of Keras's six CPU variants is a gate job, or N shard jobs whose K are 1 ... N, and
    the report expects exactly those variants (it then wants every shard of each)."""
    yaml = pytest.importorskip("yaml")
    [workflow] = [path for path in WORKFLOWS if path.name == "kerasperf.yml"]
    jobs = yaml.safe_load(workflow.read_text(encoding="utf-8"))["jobs"]
    shards: dict[str, list[tuple[int, int]]] = {}
    for entry in jobs["gate"]["strategy"]["matrix"]["include"]:
        variant = entry["backend"] + ("-nnx" if entry.get("nnx") else "")
        shards.setdefault(variant, []).append((entry.get("shard", 1), entry.get("shards", 1)))
    assert sorted(shards) == ["jax", "jax-nnx", "numpy", "openvino", "tensorflow", "torch"]
    for variant, found in shards.items():
        (count,) = {n for _, n in found}
        assert sorted(k for k, _ in found) == list(range(1, count + 1)), variant
    assert shards["torch"] == [(k, 4) for k in range(1, 5)]
    report = "\n".join(step.get("run", "") for step in jobs["report"]["steps"])
    assert "--expect torch jax jax-nnx tensorflow numpy openvino" in report


def _uploads(job: Json) -> list[str]:
    return [
        str(step["with"]["name"])
        for step in job.get("steps") or []
        if str(step.get("uses", "")).startswith("actions/upload-artifact@")
    ]


@pytest.mark.parametrize("workflows", [WORKFLOWS, ADOPTION_WORKFLOWS], ids=["ours", "adoption"])
def test_a_download_pattern_matches_only_the_artifacts_of_the_jobs_it_needs(
    workflows: list[Path],
) -> None:
    """A re-run of the rebaseline proposal found the patch artifact of its first attempt
    among the ``kerasperf-baselines-*`` it merges: no pattern may match another job's upload."""
    yaml = pytest.importorskip("yaml")
    checked = 0
    for path in workflows:
        jobs = yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"]
        for name, job in jobs.items():
            needs = job.get("needs") or []
            needs = [needs] if isinstance(needs, str) else needs
            for step in job.get("steps") or []:
                pattern = (step.get("with") or {}).get("pattern")
                if not str(step.get("uses", "")).startswith("actions/download-artifact@"):
                    continue
                if pattern is None:
                    continue
                checked += 1
                for other, other_job in jobs.items():
                    for upload in _uploads(other_job):
                        if fnmatch.fnmatchcase(upload, pattern):
                            assert other in needs, (
                                f"{path.name}: job {name}'s pattern {pattern!r} matches "
                                f"{upload!r} of job {other}"
                            )
    assert checked > 0


def _actionlint() -> str | None:
    here = Path(sys.executable).parent / "actionlint"
    return str(here) if here.exists() else shutil.which("actionlint")


def test_actionlint_reports_no_findings() -> None:
    actionlint = _actionlint()
    if actionlint is None:
        pytest.skip("actionlint is not installed (requirements/ci.txt has it)")
    done = subprocess.run(
        [
            actionlint,
            "-shellcheck=",
            "-pyflakes=",
            *map(str, WORKFLOWS),
            *map(str, ADOPTION_WORKFLOWS),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- the comment is rendered by the bot, from validated results ------------------------------

HOSTILE = (
    "@octocat @keras-team/owners cc fixes #1 GH-2 keras-team/keras#3 "
    "https://github.com/keras-team/keras/issues/4 www.evil.example [click](https://evil.example) "
    "<img src=x> ::add-mask::x"
)
#: What GitHub makes live in text as it shows (entities decoded: ``&#64;name`` is reported to
#: mention), and link markup, which entities never make.
LIVE = {
    "mention": re.compile(r"@[A-Za-z0-9]"),
    "reference": re.compile(r"#[0-9]|GH-[0-9]", re.IGNORECASE),
    "url": re.compile(r"(?:https?|ftp)://|www\.", re.IGNORECASE),
}
LINK = re.compile(r"\]\(|\]\[|<a[\s>]|<img|<https?:", re.IGNORECASE)


def _live(body: str) -> dict[str, list[str]]:
    """What would be live in a comment ``body``: mentions, references, URLs, links, and lines
    that are workflow commands in a log."""
    shown = html.unescape(body)
    found = {name: pattern.findall(shown) for name, pattern in LIVE.items()}
    found["link"] = LINK.findall(body)
    found["workflow command"] = [line for line in shown.splitlines() if line.startswith("::")]
    return {name: hits for name, hits in found.items() if hits}


def test_the_bot_renders_a_hostile_results_file_with_nothing_live(
    tmp_path: Path, inner: Inner
) -> None:
    """A fork's results file with mentions, references, links and workflow commands in its
    test id, failure text and stale keys: the comment shows them as text, none of them live."""
    data = failing_results(inner)
    result = data["results"][0]
    result["nodeid"] = result["key"] = f"test_x.py::test_local[{HOSTILE}]"
    result["verdict"]["failures"][0]["text"] += " " + HOSTILE
    data["summary"]["stale"] = [f"test_x.py::gone[{HOSTILE}]"]
    results = {"kerasperf-results-numpy.json": json.dumps(data)}
    scenario: Json = {
        "payload": _payload(FORK_REPO, FORK_ID),
        "pulls": [_pr(12, FORK_REPO, FORK_ID, SHA)],
        "artifacts": _artifact(tmp_path, "unused", results, {"report.md": "@octocat #1"}),
        "command": [sys.executable, "-m", "pytest_kerasperf"],
    }
    out = _run_bot(tmp_path, scenario)
    (write,) = _writes(out)
    body: str = write["params"]["body"]
    assert "regression" in body  # the report of the results, rendered
    assert "octocat" in body  # shown, as text
    assert "@octocat #1" not in body  # the fork's own Markdown is never posted
    assert _live(body.replace(RUN_URL, "")) == {}, body


def test_a_refused_results_file_is_said_refused_and_not_shown(tmp_path: Path) -> None:
    results = {"kerasperf-results-numpy.json": '{"schema_version": 4, "results": "@octocat #1"}'}
    scenario: Json = {
        "payload": _payload(FORK_REPO, FORK_ID),
        "pulls": [_pr(12, FORK_REPO, FORK_ID, SHA)],
        "artifacts": _artifact(tmp_path, "unused", results),
        "command": [sys.executable, "-m", "pytest_kerasperf"],
    }
    out = _run_bot(tmp_path, scenario)
    (write,) = _writes(out)
    body: str = write["params"]["body"]
    assert "were refused by `kerasperf report` (exit status 2)" in body
    assert "octocat" not in body
    # The refusal is logged between stop-commands lines: nothing in it is obeyed.
    [at] = [i for i, line in enumerate(out["logs"]) if line.startswith("::stop-commands::")]
    token = out["logs"][at].removeprefix("::stop-commands::")
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    assert "kerasperf report: exit status 2" in out["logs"][at + 1]
    assert out["logs"][at + 2] == f"::{token}::"


# --- the perf coverage of the diff, read from the pull request's merge commit -------------------


def _keras_origin(tmp_path: Path) -> tuple[Path, str]:
    """A Keras-like repository whose ``refs/pull/7/merge`` merges a head onto master, cloned as
    the default branch's checkout; (the checkout, the head's sha)."""
    origin = tmp_path / "origin"
    (origin / "keras" / "src").mkdir(parents=True)
    _git(origin, "init", "-q", "-b", "master")
    (origin / "keras" / "src" / "a.py").write_text("def f():\n    return 1\n")
    _git(origin, "add", ".")
    _git(origin, "commit", "-q", "-m", "base")
    _git(origin, "checkout", "-q", "-b", "pr")
    (origin / "keras" / "src" / "a.py").write_text("def f():\n    return 2\n")
    _git(origin, "commit", "-qam", "head")
    head = _git(origin, "rev-parse", "HEAD").strip()
    _git(origin, "checkout", "-q", "master")
    _git(origin, "merge", "-q", "--no-ff", "--no-edit", "pr")
    _git(origin, "update-ref", "refs/pull/7/merge", "HEAD")
    _git(origin, "reset", "-q", "--hard", "HEAD~1")
    workspace = tmp_path / "workspace"
    _git(tmp_path, "clone", "-q", "--depth=1", f"file://{origin}", str(workspace))
    return workspace, head


def _coverage_scenario(tmp_path: Path, sha: str) -> Json:
    return {
        "payload": _payload(listed=[_listed(7, BASE_ID, sha=sha)], sha=sha),
        "pulls": [_pr(7, BASE_REPO, BASE_ID, sha)],
        "artifacts": _artifact(tmp_path, _report()),
    }


def test_the_bot_reads_the_coverage_of_the_merge_commit_in_a_keras_checkout(
    tmp_path: Path,
) -> None:
    workspace, head = _keras_origin(tmp_path)
    out = _run_bot(tmp_path, _coverage_scenario(tmp_path, head), workspace)
    assert out["result"]["action"] == "created"
    args = json.loads((tmp_path / "rendered.md.args").read_text())
    at = args.index("--coverage")
    assert args[at : at + 4] == [
        "--coverage",
        "refs/kerasperf/pull-7^1..refs/kerasperf/pull-7",
        "--repo",
        str(workspace),
    ]
    # Fetched as objects only: the checkout's files are the default branch's.
    assert _git(workspace, "rev-parse", "refs/kerasperf/pull-7^2").strip() == head
    assert (workspace / "keras" / "src" / "a.py").read_text() == "def f():\n    return 1\n"
    assert _git(workspace, "status", "--porcelain") == ""


def test_the_bot_says_why_there_is_no_coverage(tmp_path: Path) -> None:
    workspace, head = _keras_origin(tmp_path)
    other = "d" * 40  # the run's head is not the merge commit's
    out = _run_bot(tmp_path, _coverage_scenario(tmp_path, other), workspace)
    (write,) = _writes(out)
    assert "--coverage" not in json.loads((tmp_path / "rendered.md.args").read_text())
    assert (
        write["params"]["body"]
        .rstrip()
        .endswith(
            "❔ Not computed: the pull request's merge commit is of another head than this run's."
        )
    )
    # No merge commit at all (a conflict): said so.
    _git(tmp_path / "origin", "update-ref", "-d", "refs/pull/7/merge")
    out = _run_bot(tmp_path, _coverage_scenario(tmp_path, head), workspace)
    (write,) = _writes(out)
    assert (
        "❔ Not computed: the pull request has no merge commit to read" in write["params"]["body"]
    )
    # Outside a Keras checkout (this repository's own pull requests): no section at all.
    out = _run_bot(tmp_path, _coverage_scenario(tmp_path, head), tmp_path / "origin" / "keras")
    (write,) = _writes(out)
    assert "Perf coverage" not in write["params"]["body"]
