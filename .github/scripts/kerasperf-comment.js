// Posts the kerasperf report of a pull request's `kerasperf` run as one comment
// on that pull request, or updates the comment the bot posted before.
//
// Run by .github/workflows/kerasperf-comment.yml (on: workflow_run) through
// actions/github-script, with the base repository's token:
//
//   const run = require(process.env.GITHUB_WORKSPACE + '/.github/scripts/kerasperf-comment.js');
//   await run({ github, context, core });
//
// The run it reports on may come from a fork, so everything the pull request
// produced is untrusted:
//
// - the pull request is taken from the event (workflow_run.pull_requests for a
//   same-repository branch, else the open pull request whose head repository
//   and head SHA are the run's), never from the artifact; anything but exactly
//   one match is refused;
// - the `kerasperf-report` artifact carries only the run's results files
//   (`kerasperf-results-<run>.json`); it is downloaded through the API into
//   memory, with size limits before and after download and on
//   decompression, and only entries so named are written, under names it
//   checked, into a fresh directory;
// - the comment is rendered here, by this repository's own `kerasperf report`
//   (the default branch's, installed by the workflow), which validates every
//   file as untrusted input as `kerasperf accept` does and escapes every cell
//   (mentions and references broken with U+200B); a file it refuses is not
//   shown, only said to be refused. No Markdown of the pull request's is
//   posted, and its output never reaches the log unwrapped;
// - in a Keras checkout, the perf coverage of the diff is read from the pull
//   request's merge commit, fetched as objects into the default branch's
//   checkout (never checked out, nothing of it run) and checked to be of the
//   run's head; `kerasperf report --coverage` escapes every name of it;
// - only a comment written by the bot itself and starting with the marker is
//   ever edited;
// - a run whose head SHA is no longer the pull request's head writes nothing,
//   so an older run never overwrites a newer report.
//
// Every refusal is a log line and a normal exit: the bot never fails a
// pull request's checks.

'use strict';

const childProcess = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');

const MARKER = '<!-- kerasperf-report -->';
const SHA_MARKER_PREFIX = '<!-- kerasperf-sha: ';
const ARTIFACT_NAME = 'kerasperf-report';
// The results files of the run's gate jobs, flat, as kerasperf.yml uploads them.
const RESULTS_ENTRY_RE = /^kerasperf-results-[a-z0-9][a-z0-9-]{0,39}\.json$/;
const MAX_RESULTS_FILES = 16;
// The runs the report expects results of (kerasperf report --expect).
const EXPECT = ['torch', 'jax', 'jax-nnx', 'tensorflow', 'numpy', 'openvino'];
const DEFAULT_BOT_LOGIN = 'github-actions[bot]';

// GitHub refuses comment bodies over 65,536 characters.  The body is cut at a
// line boundary at BODY_LIMIT, well under it, leaving room for the closing
// tags and the line that links the run.
const GITHUB_COMMENT_LIMIT = 65536;
const BODY_LIMIT = 60000;
const MAX_CLOSING_TAGS = 10;
// A results file of the bundled suite is about 1 MB (kerasperf report reads up to 64 MiB).
const MAX_ARTIFACT_BYTES = 128 * 1024 * 1024; // the zip, as listed and as downloaded
const MAX_REPORT_BYTES = 256 * 1024 * 1024; // one results file, decompressed (the reader's cap)
const MAX_TOTAL_BYTES = 1024 * 1024 * 1024; // all of them (a census run: about 330 MB)

const SHA_RE = /^[0-9a-f]{40}$/;

class Refusal extends Error {}

function refuse(message) {
  throw new Refusal(message);
}

// --- the pull request ------------------------------------------------------

function sameId(a, b) {
  return a !== undefined && a !== null && b !== undefined && b !== null && String(a) === String(b);
}

/** The open pull request this run is for, from the event only; refuses otherwise. */
async function findPullRequest({ github, owner, repo, run, core }) {
  const headRepo = run.head_repository || {};
  const headRepoName = headRepo.full_name;
  const headSha = run.head_sha;
  if (!headRepoName || !SHA_RE.test(String(headSha))) {
    refuse('the workflow run has no head repository or head SHA');
  }
  const baseRepoId = (run.repository && run.repository.id) || undefined;

  // Same-repository pull requests: listed in the event.  Entries whose head is
  // another repository (GitHub lists base-repository PRs whose branch has the
  // fork's branch name) are left out.
  const listed = (run.pull_requests || []).filter(
    (p) =>
      p && p.head && p.base && p.head.repo && p.base.repo &&
      sameId(p.head.repo.id, headRepo.id) && sameId(p.base.repo.id, baseRepoId),
  );
  if (listed.length > 1) {
    refuse(`the run lists ${listed.length} pull requests (${listed.map((p) => '#' + p.number).join(', ')}); not commenting on any`);
  }
  if (listed.length === 1) {
    core.info(`pull request #${listed[0].number} from the event`);
    return listed[0].number;
  }

  // Forks (the event lists no pull request): the open pull requests of this
  // repository whose head repository is the run's, found by the run's head
  // branch and by its head commit.
  const candidates = new Map();
  const owner_ = headRepo.owner && headRepo.owner.login;
  if (owner_ && run.head_branch) {
    const byBranch = await github.paginate(github.rest.pulls.list, {
      owner, repo, state: 'open', head: `${owner_}:${run.head_branch}`, per_page: 100,
    });
    for (const p of byBranch) candidates.set(p.number, p);
  }
  try {
    const { data: byCommit } = await github.rest.repos.listPullRequestsAssociatedWithCommit({
      owner, repo, commit_sha: headSha, per_page: 100,
    });
    for (const p of byCommit || []) candidates.set(p.number, p);
  } catch (error) {
    core.info(`pull requests of commit ${headSha}: ${error.message}`);
  }
  const fromHeadRepo = [...candidates.values()].filter(
    (p) => p && p.state === 'open' && p.head && p.head.repo && p.head.repo.full_name === headRepoName,
  );
  const matching = fromHeadRepo.filter((p) => p.head.sha === headSha);
  if (matching.length === 1) {
    core.info(`pull request #${matching[0].number} from ${headRepoName} at ${headSha}`);
    return matching[0].number;
  }
  if (matching.length > 1) {
    refuse(`${matching.length} open pull requests (${matching.map((p) => '#' + p.number).join(', ')}) have head ${headRepoName}@${headSha}; not commenting on any`);
  }
  if (fromHeadRepo.length > 0) {
    refuse(`stale run: head ${headSha} is no longer the head of ${fromHeadRepo.map((p) => `#${p.number} (now ${p.head.sha})`).join(', ')}; a newer run reports`);
  }
  refuse(`no open pull request has head ${headRepoName}@${headSha}`);
}

/** The pull request now; refuses unless it is open and its head is still this run's commit. */
async function checkHead({ github, owner, repo, number, run }) {
  const { data: pr } = await github.rest.pulls.get({ owner, repo, pull_number: number });
  if (pr.state !== 'open') refuse(`pull request #${number} is ${pr.state}`);
  const headRepoName = pr.head && pr.head.repo && pr.head.repo.full_name;
  if (headRepoName !== run.head_repository.full_name) {
    refuse(`pull request #${number}'s head repository is ${headRepoName}, the run's is ${run.head_repository.full_name}`);
  }
  if (pr.head.sha !== run.head_sha) {
    refuse(`stale run: pull request #${number}'s head is now ${pr.head.sha}, this run is for ${run.head_sha}; a newer run reports`);
  }
  return pr;
}

// --- the artifact ----------------------------------------------------------

/** The entries of a zip archive held in memory: name, flags, method, sizes, offset. */
function zipEntries(zip) {
  const EOCD = 0x06054b50;
  const CENTRAL = 0x02014b50;
  if (zip.length < 22) refuse('the artifact is not a zip archive');
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === EOCD) { eocd = i; break; }
  }
  if (eocd < 0) refuse('the artifact is not a zip archive (no end of central directory)');
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const entries = [];
  for (let n = 0; n < count; n++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== CENTRAL) refuse('the artifact\'s zip directory is damaged');
    const nameLength = zip.readUInt16LE(at + 28);
    entries.push({
      flags: zip.readUInt16LE(at + 8),
      method: zip.readUInt16LE(at + 10),
      compressed: zip.readUInt32LE(at + 20),
      size: zip.readUInt32LE(at + 24),
      offset: zip.readUInt32LE(at + 42),
      name: zip.subarray(at + 46, at + 46 + nameLength).toString('utf8'),
    });
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
  }
  return entries;
}

/** The bytes of one entry of a zip archive held in memory (stored or deflated). */
function readEntry(zip, found, maxBytes) {
  const LOCAL = 0x04034b50;
  const name = found.name;
  if (found.flags & 1) refuse(`${name} is encrypted`);
  if (found.size > maxBytes || found.compressed > zip.length) {
    refuse(`${name} is ${found.size} bytes, over the ${maxBytes}-byte limit`);
  }
  const local = found.offset;
  if (local + 30 > zip.length || zip.readUInt32LE(local) !== LOCAL) refuse(`${name}'s zip header is damaged`);
  const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
  if (start + found.compressed > zip.length) refuse(`${name} runs past the end of the artifact`);
  const data = zip.subarray(start, start + found.compressed);
  if (found.method === 0) return data;
  if (found.method !== 8) refuse(`${name} uses zip method ${found.method}`);
  try {
    return zlib.inflateRawSync(data, { maxOutputLength: maxBytes });
  } catch (error) {
    refuse(`${name} does not decompress within ${maxBytes} bytes: ${error.message}`);
  }
}

/** The bytes of the one entry ``name`` of a zip archive held in memory. */
function readZipEntry(zip, name, maxBytes) {
  const found = zipEntries(zip).filter((entry) => entry.name === name);
  if (found.length > 1) refuse(`the artifact holds ${name} twice`);
  if (!found.length) refuse(`the artifact has no ${name}`);
  return readEntry(zip, found[0], maxBytes);
}

/** name -> bytes of the results files in the run's `kerasperf-report` artifact. */
async function readResults({ github, owner, repo, run, limits, core }) {
  const { data } = await github.rest.actions.listWorkflowRunArtifacts({
    owner, repo, run_id: run.id, name: ARTIFACT_NAME, per_page: 100,
  });
  const artifacts = ((data && data.artifacts) || []).filter((a) => a && a.name === ARTIFACT_NAME);
  if (artifacts.length !== 1) refuse(`the run has ${artifacts.length} ${ARTIFACT_NAME} artifacts`);
  const artifact = artifacts[0];
  if (artifact.expired) refuse(`the ${ARTIFACT_NAME} artifact has expired`);
  if (!(artifact.size_in_bytes <= limits.artifactBytes)) {
    refuse(`the ${ARTIFACT_NAME} artifact is ${artifact.size_in_bytes} bytes, over the ${limits.artifactBytes}-byte limit`);
  }
  const download = await github.rest.actions.downloadArtifact({
    owner, repo, artifact_id: artifact.id, archive_format: 'zip',
  });
  const zip = Buffer.from(download.data);
  if (zip.length > limits.artifactBytes) refuse(`the downloaded artifact is over ${limits.artifactBytes} bytes`);
  const files = new Map();
  let total = 0;
  let ignored = 0;
  for (const entry of zipEntries(zip)) {
    if (!RESULTS_ENTRY_RE.test(entry.name)) { ignored += 1; continue; }
    if (files.has(entry.name)) refuse(`the artifact holds ${entry.name} twice`);
    if (files.size >= MAX_RESULTS_FILES) refuse(`the artifact holds more than ${MAX_RESULTS_FILES} results files`);
    const bytes = readEntry(zip, entry, limits.reportBytes);
    total += bytes.length;
    if (total > MAX_TOTAL_BYTES) refuse(`the results files are over ${MAX_TOTAL_BYTES} bytes in all`);
    files.set(entry.name, bytes);
  }
  if (ignored) core.info(`${ignored} entries of the artifact are not results files: not read`);
  return files;
}

// --- the report, rendered here ----------------------------------------------

/** A text that GitHub's runner obeys no workflow command in: between stop-commands lines. */
function logInert(core, text) {
  const token = crypto.randomBytes(16).toString('hex');
  core.info(`::stop-commands::${token}`);
  core.info(String(text));
  core.info(`::${token}::`);
}

/**
 * The report's Markdown, rendered by this repository's `kerasperf report` from the results
 * files (validated there as untrusted input). A refused file is said to be refused; its
 * content is not shown.
 */
function renderReport(files, { command, core, runUrl, coverage = { args: [], note: null } }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kerasperf-results-'));
  try {
    const paths = [];
    for (const [name, bytes] of files) {
      const where = path.join(dir, name); // a checked flat name
      fs.writeFileSync(where, bytes, { flag: 'wx' });
      paths.push(where);
    }
    const markdown = path.join(dir, 'report.md');
    const [program, ...args] = command;
    const done = childProcess.spawnSync(
      program,
      [...args, 'report', ...paths.sort(), '--expect', ...EXPECT, ...coverage.args, '--markdown', markdown],
      { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300000, maxBuffer: 64 * 1024 * 1024 },
    );
    if ((done.status === 0 || done.status === 1) && fs.existsSync(markdown)) {
      const text = fs.readFileSync(markdown, 'utf8');
      if (!coverage.note) return text;
      return `${text.replace(/\s+$/, '')}\n\n#### Perf coverage of this diff\n\n❔ Not computed: ${coverage.note}.\n`;
    }
    logInert(core, `kerasperf report: exit status ${done.status}: ${String(done.stderr || done.error || '').slice(0, 2000)}`);
    return [
      MARKER,
      '### kerasperf',
      '',
      `❌ The run's results files were refused by \`kerasperf report\` (exit status ${done.status}): ` +
        `nothing of them is shown. [The workflow run](${runUrl}) holds them.`,
    ].join('\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// --- the perf coverage of the pull request's diff ---------------------------

/**
 * The `kerasperf report` arguments that add the perf coverage of the pull request's diff: its
 * merge commit against the base it was merged onto, fetched into the default branch's
 * checkout as objects only (never checked out, nothing of it run: `kerasperf report` reads
 * blobs and parses them with `ast`). Only in a Keras checkout (one with keras/src). Where the
 * diff cannot be read, no arguments and a note saying why.
 */
function coverageArgs({ number, headSha, repoDir, core }) {
  if (!repoDir || !fs.existsSync(path.join(repoDir, 'keras', 'src'))) return { args: [], note: null };
  const n = Number(number);
  if (!Number.isSafeInteger(n) || n < 1) return { args: [], note: 'no pull request number' };
  const ref = `refs/kerasperf/pull-${n}`;
  const git = (...args) =>
    childProcess.spawnSync('git', args, {
      cwd: repoDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000,
    });
  const fetched = git('fetch', '--no-tags', '--quiet', '--depth=2', 'origin', `+refs/pull/${n}/merge:${ref}`);
  if (fetched.status !== 0) {
    logInert(core, `git fetch refs/pull/${n}/merge: ${String(fetched.stderr || fetched.error || '').slice(0, 1000)}`);
    return {
      args: [],
      note: 'the pull request has no merge commit to read (it conflicts with its base, or it could not be fetched)',
    };
  }
  const head = git('rev-parse', '--verify', '--quiet', `${ref}^2`);
  if (head.status !== 0 || String(head.stdout).trim() !== String(headSha)) {
    return { args: [], note: "the pull request's merge commit is of another head than this run's" };
  }
  return { args: ['--coverage', `${ref}^1..${ref}`, '--repo', repoDir], note: null };
}

// --- the comment body ------------------------------------------------------

/**
 * The comment: the marker line, the run's head SHA in a hidden marker, then
 * the report (its own marker line dropped), cut at a line boundary under
 * GitHub's limit with a line linking the run that holds the full report.
 */
function buildBody(report, { headSha, runUrl, limit = BODY_LIMIT }) {
  let text = String(report).replace(/\u0000/g, '').replace(/\r\n/g, '\n');
  const lines = text.split('\n');
  if (lines.length && lines[0].trim() === MARKER) lines.shift();
  text = lines.join('\n').replace(/\s+$/, '');
  const head = `${MARKER}\n${SHA_MARKER_PREFIX}${headSha} -->\n`;
  const body = head + text + '\n';
  if (body.length <= limit) return body;
  let cut = body.lastIndexOf('\n', limit);
  if (cut <= head.length) {
    cut = limit; // one enormous line: cut inside it, never inside a UTF-16 pair
    const code = body.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  }
  const kept = body.slice(0, cut);
  const opened = (kept.match(/<details[\s>]/gi) || []).length;
  const closed = (kept.match(/<\/details>/gi) || []).length;
  const unclosed = Math.min(MAX_CLOSING_TAGS, Math.max(0, opened - closed));
  const closing = unclosed ? '\n\n' + Array(unclosed).fill('</details>').join('\n') : '';
  const note =
    `\n\n---\n✂️ This report was cut to fit GitHub's comment limit (${GITHUB_COMMENT_LIMIT.toLocaleString('en-US')} characters): ` +
    `${cut.toLocaleString('en-US')} of ${body.length.toLocaleString('en-US')} characters are shown. ` +
    `The whole report is \`kerasperf report\` of the results files in the \`${ARTIFACT_NAME}\` artifact of [the workflow run](${runUrl}).\n`;
  return kept + closing + note;
}

// --- the run ---------------------------------------------------------------

async function run({
  github, context, core, limits = {}, botLogin, command = ['kerasperf'], repoDir = process.env.GITHUB_WORKSPACE,
} = {}) {
  const payload = context.payload || {};
  const wr = payload.workflow_run;
  const { owner, repo } = context.repo;
  const login = botLogin || process.env.KERASPERF_COMMENT_AUTHOR || DEFAULT_BOT_LOGIN;
  const sizes = {
    artifactBytes: limits.artifactBytes || MAX_ARTIFACT_BYTES,
    reportBytes: limits.reportBytes || MAX_REPORT_BYTES,
  };
  try {
    if (!wr) refuse('not a workflow_run event');
    if (wr.event !== 'pull_request') refuse(`the run was triggered by ${wr.event}, not by a pull request`);
    const runUrl = String(wr.html_url || '');
    if (!/^https:\/\/[^\s()]+$/.test(runUrl)) refuse('the workflow run has no URL');

    const number = await findPullRequest({ github, owner, repo, run: wr, core });
    const files = await readResults({ github, owner, repo, run: wr, limits: sizes, core });
    const coverage = coverageArgs({ number, headSha: wr.head_sha, repoDir, core });
    const report = renderReport(files, { command, core, runUrl, coverage });
    const body = buildBody(report, { headSha: wr.head_sha, runUrl });

    const comments = await github.paginate(github.rest.issues.listComments, {
      owner, repo, issue_number: number, per_page: 100,
    });
    const mine = comments.find(
      (c) =>
        c && c.user && c.user.type === 'Bot' && c.user.login === login &&
        typeof c.body === 'string' && c.body.startsWith(MARKER),
    );

    // The last check before writing: an older run never overwrites a newer report.
    await checkHead({ github, owner, repo, number, run: wr });

    if (mine && mine.body === body) {
      core.info(`comment ${mine.id} on #${number} already shows this report`);
      return { action: 'unchanged', number, comment: mine.id };
    }
    if (mine) {
      await github.rest.issues.updateComment({ owner, repo, comment_id: mine.id, body });
      core.info(`updated comment ${mine.id} on #${number} (${body.length} characters)`);
      return { action: 'updated', number, comment: mine.id };
    }
    const { data: created } = await github.rest.issues.createComment({
      owner, repo, issue_number: number, body,
    });
    core.info(`created comment ${created && created.id} on #${number} (${body.length} characters)`);
    return { action: 'created', number, comment: created && created.id };
  } catch (error) {
    if (error instanceof Refusal) {
      core.info(`kerasperf comment: skipped: ${error.message}`);
      return { action: 'skipped', reason: error.message };
    }
    throw error;
  }
}

module.exports = run;
module.exports.run = run;
module.exports.buildBody = buildBody;
module.exports.readZipEntry = readZipEntry;
module.exports.renderReport = renderReport;
module.exports.coverageArgs = coverageArgs;
module.exports.MARKER = MARKER;
module.exports.BODY_LIMIT = BODY_LIMIT;
module.exports.GITHUB_COMMENT_LIMIT = GITHUB_COMMENT_LIMIT;
