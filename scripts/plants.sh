#!/usr/bin/env bash
# Plants (Tests/plants/*.plant): each mistake put into a scratch copy of the sources and the
# tests named for it run; every one must be caught. Before a release, not in CI:
#   scripts/plants.sh [NAME…]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
ensure_packages "${build_packages[@]}" "${test_packages[@]}" rsync
# shellcheck source=scripts/lib/venvs.sh
source scripts/lib/venvs.sh
ensure_venv "$test_venv" "${test_tools[@]}"
export WORKER_MOTO_SERVER="$test_venv/bin/moto_server"
exec python3 scripts/plants.py "$@"
