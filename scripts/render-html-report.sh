#!/usr/bin/env bash
# Renders an HTML report of a real sync in headless Chromium and writes a screenshot.
# The scenario uses the shipped demo images, offline: sync, then change two images, add one and
# point an entry at a file that does not exist, and sync again with --report-html.
#   scripts/render-html-report.sh [OUT.png]     (needs chromium: apt-get install chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-$PWD/html-report.png}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

swift build --product worker >/dev/null
worker="$(swift build --show-bin-path)/worker"
cp -r manifests/demo "$work/demo"

# manifest FILE[=HASH_OF_FILE]…: each file with its own hash, or with the hash of another file.
manifest() {
  {
    echo "version: 1"
    echo "name: avatars"
    echo "entries:"
    for item in "$@"; do
      file="${item%%=*}"
      source="${item#*=}"
      echo "  - url: $file"
      if [[ -f "$work/$source" ]]; then
        echo "    hash: sha256:$(sha256sum "$work/$source" | cut -c1-64)"
      else
        echo "    hash: sha256:$(printf 'gone' | sha256sum | cut -c1-64)"
      fi
    done
  } >"$work/avatars.yaml"
}

manifest demo/ada.png demo/grace.png demo/linus.png demo/margaret.png
"$worker" sync "$work/avatars.yaml" --cache-dir "$work/cache" -q
# New versions of two avatars; a new avatar (a gray square); linus listed with another hash than
# its bytes have (hash_mismatch: the earlier version stays served); an entry whose file is missing.
cp manifests/demo/ken.png "$work/demo/ada.png"
cp manifests/demo/barbara.png "$work/demo/grace.png"
python3 - "$work/demo/new.png" <<'PY'
import struct, sys, zlib
def chunk(kind, data): return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
rows = b"".join(b"\0" + b"\x95\xa5\xa6" * 64 for _ in range(64))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
manifest demo/ada.png demo/grace.png demo/linus.png=demo/new.png demo/margaret.png demo/new.png demo/missing.png
"$worker" sync "$work/avatars.yaml" --cache-dir "$work/cache" -q --report-html "$work/report.html" || true

browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
[[ -n "$browser" ]] || { echo "no chromium: apt-get install chromium" >&2; exit 1; }
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,820 \
  --screenshot="$out" "file://$work/report.html" 2>/dev/null
echo "$out"
