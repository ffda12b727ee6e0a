#!/usr/bin/env bash
# The proof that a kind of URL is one folder and one line: in a scratch clone of HEAD, delete
# Sources/WorkerKinds/KIND/ and the line of Kinds.swift that names a type of it, then build the
# program (debug). Prints what it removed and whether the build passed; exit 1 if it did not.
#
#   scripts/kind-removal.sh S3|OCI|SFTP [SCRATCH]
set -euo pipefail
kind=${1:?usage: scripts/kind-removal.sh KIND [SCRATCH]}
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch=${2:-/tmp/worker-kind-removal}
[ -d "$root/Sources/WorkerKinds/$kind" ] || { echo "no kind folder Sources/WorkerKinds/$kind" >&2; exit 2; }
rm -rf "$scratch"
git clone -q "$root" "$scratch"
cd "$scratch"
types=$(grep -hoE '^(package |public )?(final )?(struct|enum|class|actor) [A-Za-z0-9_]+' "Sources/WorkerKinds/$kind"/*.swift \
  | awk '{print $NF}' | sort -u)
pattern=$(echo "$types" | paste -sd'|' -)
lines=$(grep -nE "\\b($pattern)\\b" Sources/WorkerKinds/Kinds.swift || true)
[ "$(echo "$lines" | grep -c .)" -eq 1 ] || { echo "Kinds.swift names $kind on $(echo "$lines" | grep -c .) lines, not one:" >&2; echo "$lines" >&2; exit 1; }
echo "removed: Sources/WorkerKinds/$kind/ ($(find "Sources/WorkerKinds/$kind" -name "*.swift" | wc -l) files) and Kinds.swift:${lines}"
git rm -rq "Sources/WorkerKinds/$kind"
sed -i "${lines%%:*}d" Sources/WorkerKinds/Kinds.swift
git diff --cached --stat | tail -n 1
git diff --stat | tail -n 1
if swift build --product worker >build.log 2>&1; then
  echo "builds without $kind: $(git status --short | wc -l) paths changed, nothing else touched"
else
  grep -E 'error:' build.log | sort -u | head -20
  echo "does not build without $kind"
  exit 1
fi
