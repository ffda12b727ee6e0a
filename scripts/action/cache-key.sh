#!/usr/bin/env bash
# The cache's key: worker's version (an older worker refuses a newer index with exit 4) and a
# fingerprint of the manifests: `worker fingerprint` of the local files (it changes only when their
# set of URLs and hashes does), with the URLs of remote manifests, whose bytes only the sync reads
# (this step runs without the step's secrets). A run saves under the key plus its run id, only when
# its sync changed the cache or the cache was not restored under this key (sync.sh); the next
# restores the newest under the key, else the newest under the version.
set -euo pipefail
# shellcheck source=scripts/action/lib.sh
source "$GITHUB_ACTION_PATH/scripts/action/lib.sh"
expand_manifests
files=()
urls=()
for manifest in "${manifests[@]}"; do
  if [[ $manifest == *://* ]]; then urls+=("$manifest"); else files+=("$manifest"); fi
done
version="$(worker --version | awk '{ print $NF }')"
fingerprint=""
((${#files[@]} == 0)) || fingerprint="$(worker fingerprint -- "${files[@]}")"
if ((${#urls[@]})); then
  fingerprint="$(printf '%s\n' "$fingerprint" "${urls[@]}" | sha256sum | cut -d' ' -f1)"
fi
output fingerprint "$fingerprint"
output prefix "worker-$version"
output key "worker-$version-$fingerprint"
echo "cache key worker-$version-$fingerprint (${#manifests[@]} manifests)"
