#!/usr/bin/env bash
# Proposes the re-recorded baselines in the work tree (kerasperf-rebaseline.yml):
# commits benchmarks/kerasperf/baselines/, pushes the branch $BRANCH and opens a pull request against
# $BASE with `gh pr create`; when the push or the pull request is refused (the
# repository does not let GitHub Actions create pull requests, a ruleset on the
# branch, ...) it writes `git diff --binary` to $PATCH, sets the step output
# patch=true (the workflow uploads it as the kerasperf-rebaseline-patch artifact)
# and writes to the step summary how to apply it.
#
# Environment: GH_TOKEN (the job's GITHUB_TOKEN: contents and pull-requests
# write), BASE, BRANCH, RUN_URL, PATCH, JOB_RESULTS (one line on the record
# jobs), and GitHub's GITHUB_REPOSITORY, GITHUB_RUN_ID, GITHUB_SERVER_URL,
# GITHUB_STEP_SUMMARY, GITHUB_OUTPUT.
#
# The token is never written to disk or put on a command line: git gets it
# from a credential helper given with -c for the one push, which reads it from
# the environment (the checkout persisted no credentials).
set -euo pipefail

summary="${GITHUB_STEP_SUMMARY:-/dev/stderr}"
output="${GITHUB_OUTPUT:-/dev/null}"
title="kerasperf: re-record baselines"

if [ -z "$(git status --porcelain --untracked-files=all -- benchmarks/kerasperf/baselines/)" ]; then
  echo "No baseline moved: nothing to propose. (${JOB_RESULTS:-})" | tee -a "$summary"
  echo "patch=false" >> "$output"
  exit 0
fi

git add --all -- benchmarks/kerasperf/baselines/
changed=$(git diff --cached --name-status -- benchmarks/kerasperf/baselines/)
git diff --cached --binary -- benchmarks/kerasperf/baselines/ > "$PATCH"

body=$(mktemp)
{
  echo "Baselines re-recorded by [kerasperf-rebaseline run ${GITHUB_RUN_ID}](${RUN_URL})"
  echo "on the pinned CI environment. ${JOB_RESULTS:-}"
  echo
  echo "Changed files:"
  echo
  echo '```'
  echo "$changed"
  echo '```'
  echo
  echo "Review the moved counts before merging: a rise is a regression recorded as the new"
  echo "baseline. A pull request opened by GITHUB_TOKEN starts no workflow: close and reopen"
  echo "it (or push to it) to run the kerasperf gate on it."
} > "$body"

git -c user.name="github-actions[bot]" \
    -c user.email="41898282+github-actions[bot]@users.noreply.github.com" \
    commit --quiet -m "$title" -m "Re-recorded by ${RUN_URL}"

pushed=false
url=""
# shellcheck disable=SC2016  # $GH_TOKEN is expanded by the helper's shell, from the environment
if GIT_TERMINAL_PROMPT=0 git \
    -c credential.helper= \
    -c 'credential.helper=!f() { test "$1" = get || return 0; echo username=x-access-token; echo "password=${GH_TOKEN}"; }; f' \
    push --quiet origin "HEAD:refs/heads/${BRANCH}"; then
  pushed=true
  if url=$(gh pr create --repo "$GITHUB_REPOSITORY" --base "$BASE" --head "$BRANCH" \
      --title "$title" --body-file "$body"); then
    {
      echo "### kerasperf: baselines re-recorded"
      echo
      echo "Opened ${url}."
      echo
      echo '```'
      echo "$changed"
      echo '```'
    } >> "$summary"
    echo "patch=false" >> "$output"
    exit 0
  fi
fi

echo "::warning::could not open a pull request with the re-recorded baselines; the kerasperf-rebaseline-patch artifact holds them (see the run's summary)"
echo "patch=true" >> "$output"
{
  echo "### kerasperf: baselines re-recorded, no pull request"
  echo
  if [ "$pushed" = true ]; then
    echo "The branch \`${BRANCH}\` was pushed, but the pull request could not be opened"
    echo "(does the repository let GitHub Actions create pull requests? Settings → Actions →"
    echo "General → Workflow permissions). Open it from"
    echo "${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}/compare/${BASE}...${BRANCH}, or apply the patch:"
  else
    echo "The branch could not be pushed. Apply the patch:"
  fi
  echo
  echo '```sh'
  echo "gh run download ${GITHUB_RUN_ID} --repo ${GITHUB_REPOSITORY} --name kerasperf-rebaseline-patch"
  echo "git switch -c kerasperf/rebaseline-${GITHUB_RUN_ID} origin/${BASE}"
  echo "git apply kerasperf-baselines.patch"
  echo "git add benchmarks/kerasperf/baselines/ && git commit -m \"${title}\""
  echo '```'
  echo
  echo "Changed files:"
  echo
  echo '```'
  echo "$changed"
  echo '```'
} >> "$summary"
