#!/usr/bin/env bash
# The test suite from a fresh clone: installs what the build and the tests need when it is
# missing, then runs `swift test` (unit tests, integration tests against local servers, and the
# built binary end to end). Extra arguments go to `swift test`:
#   scripts/test.sh --filter HostileServerTests
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
ensure_packages "${build_packages[@]}" "${test_packages[@]}"
# moto's S3 server (S3Tests), from PyPI in a virtual environment of its own, made once.
# shellcheck source=scripts/lib/venvs.sh
source scripts/lib/venvs.sh
ensure_venv "$test_venv" "${test_tools[@]}"
venv="$test_venv"
export WORKER_MOTO_SERVER="$venv/bin/moto_server"
exec swift test "$@"
