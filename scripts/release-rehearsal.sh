#!/usr/bin/env bash
# A release made as the maintainers make one, from this commit, with throwaway keys: a clean clone
# in DIR (kept, so a second rehearsal builds only what changed), the keys made in DIR.keys and their
# public halves committed as packaging/release-keys/, the commit tagged vVERSION, scripts/release.sh
# run there, and the release's lines in packaging/release-checksums.txt committed as a maintainer
# would. CI makes its release build this way (the suite tests the binary users download), and
# ReleaseTests checks what it made.
#   scripts/release-rehearsal.sh DIR [BASE_URL]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?the folder of the clone}
base_url=${2:-http://127.0.0.1/releases/}
source_repo="$PWD"
commit="$(git rev-parse HEAD)"

if [ -d "$target/.git" ]; then
  git -C "$target" fetch -q "$source_repo" "$commit"
  git -C "$target" checkout -q --force --detach "$commit"
  git -C "$target" tag -l | xargs -r git -C "$target" tag -d >/dev/null
  git -C "$target" clean -qfdx -e /.build-release/
else
  git clone -q --no-local "$source_repo" "$target"
  git -C "$target" checkout -q --detach "$commit"
fi
git_as_maintainer=(git -C "$target" -c user.name="worker release rehearsal" -c user.email=release@example.org
  -c commit.gpgsign=false -c tag.gpgsign=false)

keys="$target.keys"
if [ ! -s "$keys/minisign.key" ]; then
  rm -rf "$keys" && mkdir -p "$keys"
  minisign -G -W -p "$keys/minisign.pub" -s "$keys/minisign.key" >/dev/null
  ssh-keygen -q -t ed25519 -N '' -C releases@worker.example.org -f "$keys/ssh"
fi
mkdir -p "$target/packaging/release-keys"
cp "$keys/minisign.pub" "$target/packaging/release-keys/minisign.pub"
echo "releases@worker.example.org namespaces=\"file,worker-manifest\" $(cut -d' ' -f1,2 "$keys/ssh.pub")" \
  >"$target/packaging/release-keys/allowed_signers"
"${git_as_maintainer[@]}" add packaging/release-keys
"${git_as_maintainer[@]}" commit -qm "The release keys (a rehearsal's, thrown away)"
version="$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' "$target/Sources/WorkerSupport/WorkerVersion.swift")"
"${git_as_maintainer[@]}" tag "v$version"

(cd "$target" && WORKER_RELEASE_MINISIGN_KEY="$keys/minisign.key" WORKER_RELEASE_SSH_KEY="$keys/ssh" \
  bash scripts/release.sh --base-url "$base_url")
"${git_as_maintainer[@]}" commit -qam "packaging/release-checksums.txt: v$version"
echo "rehearsed: $target/dist (v$version, from $commit)"
