#!/usr/bin/env bash
# The action's first step: where worker's binary goes, and (without a version) the key its build is
# cached under: the runner's system and architecture, the Swift compiler's version, and a hash of
# the action's own Package.swift and Sources (what the action's commit builds).
set -euo pipefail
# shellcheck source=scripts/action/lib.sh
source "$GITHUB_ACTION_PATH/scripts/action/lib.sh"
temp="${RUNNER_TEMP:?RUNNER_TEMP is not set}"
# What it installs and builds is Linux's (a .deb, bash, --static-swift-stdlib).
[ "${RUNNER_OS:-Linux}" = Linux ] || die "this action runs on Linux runners only (this runner's RUNNER_OS is ${RUNNER_OS})"
if [ -n "${ACTION_VERSION:-}" ]; then
  [[ $ACTION_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+([~+.-][0-9A-Za-z.~+-]+)?$ ]] \
    || die "the version input '$ACTION_VERSION' is not a version such as 0.5.0"
  output bin-dir "$temp/worker-$ACTION_VERSION/usr/bin"
  exit 0
fi
command -v swift >/dev/null 2>&1 \
  || die "no Swift on this runner to build worker from source: set the action's version input, or install Swift first"
source_hash="$(
  cd "$GITHUB_ACTION_PATH"
  {
    swift --version 2>/dev/null
    find Package.swift Sources -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
  } | sha256sum | cut -c1-32
)"
output bin-dir "$temp/worker-build/bin"
output key "worker-build-${RUNNER_OS:-Linux}-${RUNNER_ARCH:-$(uname -m)}-$source_hash"
