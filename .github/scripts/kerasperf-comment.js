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
// - the report artifact is downloaded through the API into memory, with size
//   limits before and after download and on decompression; only its
//   `report.md` entry is read, nothing is extracted to disk, and its text is
//   posted as data (never evaluated, never used to pick a pull request, a
//   comment or a URL);
// - only a comment written by the bot itself and starting with the marker is
//   ever edited;
// - a run whose head SHA is no longer the pull request's head writes nothing,
//   so an older run never overwrites a newer report.
//
// Every refusal is a log line and a normal exit: the bot never fails a
// pull request's checks.

'use strict';

const zlib = require('zlib');

const MARKER = '<!-- kerasperf-report -->';
const SHA_MARKER_PREFIX = '<!-- kerasperf-sha: ';
const ARTIFACT_NAME = 'kerasperf-report';
const REPORT_ENTRY = 'report.md';
const DEFAULT_BOT_LOGIN = 'github-actions[bot]';

// GitHub refuses comment bodies over 65,536 characters.  The body is cut at a
// line boundary at BODY_LIMIT, well under it, leaving room for the closing
// tags and the line that links the run.
const GITHUB_COMMENT_LIMIT = 65536;
const BODY_LIMIT = 60000;
const MAX_CLOSING_TAGS = 10;
// The plugin keeps its Markdown under 1 MB; anything much larger is refused.
const MAX_ARTIFACT_BYTES = 8 * 1024 * 1024; // the zip, as listed and as downloaded
const MAX_REPORT_BYTES = 2 * 1024 * 1024; // report.md, decompressed

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

/** The bytes of one entry of a zip archive held in memory (stored or deflated). */
function readZipEntry(zip, name, maxBytes) {
  const EOCD = 0x06054b50;
  const CENTRAL = 0x02014b50;
  const LOCAL = 0x04034b50;
  if (zip.length < 22) refuse('the artifact is not a zip archive');
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === EOCD) { eocd = i; break; }
  }
  if (eocd < 0) refuse('the artifact is not a zip archive (no end of central directory)');
  const entries = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  let found = null;
  for (let n = 0; n < entries; n++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== CENTRAL) refuse('the artifact\'s zip directory is damaged');
    const flags = zip.readUInt16LE(at + 8);
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const offset = zip.readUInt32LE(at + 42);
    const entryName = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    if (entryName === name) {
      if (found) refuse(`the artifact holds ${name} twice`);
      found = { flags, method, compressed, size, offset };
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  if (!found) refuse(`the artifact has no ${name}`);
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

/** The report's Markdown from the run's `kerasperf-report` artifact, as text. */
async function readReport({ github, owner, repo, run, limits }) {
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
  return readZipEntry(zip, REPORT_ENTRY, limits.reportBytes).toString('utf8');
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
    `The full report is the \`${ARTIFACT_NAME}\` artifact of [the workflow run](${runUrl}).\n`;
  return kept + closing + note;
}

// --- the run ---------------------------------------------------------------

async function run({ github, context, core, limits = {}, botLogin } = {}) {
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
    const report = await readReport({ github, owner, repo, run: wr, limits: sizes });
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
module.exports.MARKER = MARKER;
module.exports.BODY_LIMIT = BODY_LIMIT;
module.exports.GITHUB_COMMENT_LIMIT = GITHUB_COMMENT_LIMIT;
