#!/usr/bin/env bash
# The release binary as it ships (scripts/make-deb.sh, scripts/release.sh): symbols and notes
# stripped, and .swift_modhash — the module hash swiftc stamps into each object for its own
# incremental builds, different from one compile to the next, never read at run time — zeroed in
# place (removing it would rewrite the program headers and drop RELRO), so two builds of one commit
# are the same bytes.
#   scripts/lib/strip-release.sh BUILT SHIPPED
set -euo pipefail
built=$1 shipped=$2
install -m 0755 "$built" "$shipped"
size_hex="$(readelf -SW "$shipped" | awk '$2 == ".swift_modhash" { print $6 }')"
if [ -n "$size_hex" ]; then
  zeros="$(mktemp)"
  head -c "$((16#$size_hex))" /dev/zero >"$zeros"
  objcopy --update-section .swift_modhash="$zeros" "$shipped"
  rm -f "$zeros"
fi
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$shipped"
