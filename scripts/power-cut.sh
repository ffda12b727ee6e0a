#!/usr/bin/env bash
# Power cuts under every command that writes (Tests/tools/power_cut.py over lossyfs, a FUSE file
# system that forgets what was not synced): CUTS cuts (default 90) drawn from SEED (default 1),
# spread over cold, changed, --tree and reported syncs, export --atomic, gc, verify --repair,
# push and a remote manifest's acceptance, a tenth of them with an fsync failing, half with the
# index's WAL and half with its rollback journal. Needs root (a FUSE mount). The binary is
# $WORKER_BIN, else a release build. Extra arguments go to the harness (--only NAME, --at-end).
# Its last line: power cuts: N, lost 0, torn 0, trees incomplete 0, needs a person 0
#   scripts/power-cut.sh 2000 20261202
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
ensure_packages "${build_packages[@]}" fuse3
# shellcheck source=scripts/lib/venvs.sh
source scripts/lib/venvs.sh
ensure_venv "$test_venv" "${test_tools[@]}"
cuts="${1:-90}"
seed="${2:-1}"
shift $(($# < 2 ? $# : 2))
worker="${WORKER_BIN:-}"
if [ -z "$worker" ]; then
  worker="$(swift build -c release --scratch-path .build-release --product worker --show-bin-path)/worker"
  swift build -c release --scratch-path .build-release --product worker >/dev/null
fi
exec "$test_venv/bin/python" -W ignore Tests/tools/power_cut.py "$cuts" "$seed" --worker "$worker" "$@"
