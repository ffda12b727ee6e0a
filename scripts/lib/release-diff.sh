#!/usr/bin/env bash
# What differs between two builds of one release file (a .deb or a .tar.gz), for
# scripts/release.sh --reproduce: the members whose metadata or bytes differ and, for an ELF
# member, the sections that do — the first place to look for the reason (a path, a time, an
# order).
#   scripts/lib/release-diff.sh A B
set -euo pipefail
a=$1 b=$2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unpack() {
  mkdir -p "$2"
  case "$1" in
    *.deb)
      dpkg-deb -I "$1" >"$2.control"
      dpkg-deb -c "$1" >"$2.list"
      dpkg-deb -x "$1" "$2" ;;
    *.tar.gz)
      tar -tvzf "$1" >"$2.list"
      tar -xzf "$1" -C "$2" ;;
  esac
}
unpack "$a" "$work/a"
unpack "$b" "$work/b"
[ ! -f "$work/a.control" ] || diff "$work/a.control" "$work/b.control" | sed 's/^/control: /' || true
diff "$work/a.list" "$work/b.list" | sed 's/^/members: /' || true
(cd "$work/a" && find . -type f | sort) | while read -r member; do
  if ! cmp -s "$work/a/$member" "$work/b/$member"; then
    echo "bytes: ${member#./} ($(stat -c %s "$work/a/$member") and $(stat -c %s "$work/b/$member" 2>/dev/null || echo absent) bytes)"
    if [ "$(head -c4 "$work/a/$member" | od -An -c | tr -d ' ')" = 177ELF ]; then
      readelf -SW "$work/a/$member" | awk '$2 ~ /^\./ { print $2 }' | while read -r section; do
        objcopy -O binary -j "$section" "$work/a/$member" "$work/sa" 2>/dev/null || continue
        objcopy -O binary -j "$section" "$work/b/$member" "$work/sb" 2>/dev/null || continue
        cmp -s "$work/sa" "$work/sb" || echo "  section $section differs"
      done
    fi
  fi
done
