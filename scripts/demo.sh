#!/usr/bin/env bash
# The demo from a fresh clone: installs what the build needs when it is missing, builds worker
# (the first build fetches its Swift packages and takes a few minutes), and syncs the six demo
# avatars into the default cache. Extra arguments go to `worker sync`:
#   scripts/demo.sh --cache-dir /tmp/demo-cache
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
ensure_packages "${build_packages[@]}"
swift build --product worker
exec "$(swift build --show-bin-path)/worker" sync manifests/demo.yaml "$@"
