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
# moto's S3 server (S3Tests: signatures checked against the keys it issues), from PyPI in a
# virtual environment of its own, made once.
venv="${WORKER_TEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/worker-test-venv}"
moto=("moto[server]==5.2.5")
if [ ! -x "$venv/bin/moto_server" ] || ! "$venv/bin/pip" freeze 2>/dev/null | grep -q '^moto==5.2.5$'; then
  echo "installing ${moto[*]} into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${moto[@]}"
fi
export WORKER_MOTO_SERVER="$venv/bin/moto_server"
exec swift test "$@"
