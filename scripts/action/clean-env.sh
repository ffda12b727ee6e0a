#!/usr/bin/env bash
# Runs one of the action's scripts in a clean environment: the runner's own variables and the
# ACTION_* names given pass, nothing else. The env: of the workflow's step — its secrets — is
# inherited by every step of a composite action; this keeps it from the build (SwiftPM fetches
# packages and runs their plugins), the download and the install. The step execs this script and
# this script execs env, so no process of the step holds the secrets while SCRIPT runs.
#   exec bash "$GITHUB_ACTION_PATH/scripts/action/clean-env.sh" SCRIPT [ACTION_NAME...]
set -euo pipefail
script=$1
shift
keep=()
for name in PATH HOME USER LOGNAME LANG LC_ALL TMPDIR CI GITHUB_ACTIONS GITHUB_ACTION_PATH GITHUB_ACTION_REPOSITORY \
  GITHUB_SERVER_URL GITHUB_WORKSPACE GITHUB_OUTPUT GITHUB_PATH GITHUB_STEP_SUMMARY RUNNER_TEMP RUNNER_OS RUNNER_ARCH \
  RUNNER_TOOL_CACHE XDG_CACHE_HOME http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY SSL_CERT_FILE SSL_CERT_DIR \
  "$@"; do
  [ -z "${!name+set}" ] || keep+=("$name=${!name}")
done
exec env -i "${keep[@]}" bash "$GITHUB_ACTION_PATH/scripts/action/$script"
