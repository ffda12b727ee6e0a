#!/usr/bin/env bash
# The cache's key: worker's version (an older worker refuses a newer index with exit 4) and the
# manifests' fingerprint, which changes only when their set of URLs and hashes does. Each run
# saves under the key plus its run id; the next restores the newest under the key, else under the
# version.
set -euo pipefail
# shellcheck source=scripts/action/lib.sh
source "$GITHUB_ACTION_PATH/scripts/action/lib.sh"
expand_manifests
version="$(worker --version | awk '{ print $NF }')"
fingerprint="$(worker fingerprint "${manifests[@]}")"
output fingerprint "$fingerprint"
output prefix "worker-$version"
output key "worker-$version-$fingerprint"
echo "cache key worker-$version-$fingerprint (${#manifests[@]} manifests)"
