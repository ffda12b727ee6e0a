#!/usr/bin/env bash
# Builds dist/worker_VERSION_ARCH.deb with dpkg-deb: the release binary (Swift's runtime linked in
# with --static-swift-stdlib), the manual where `man worker` finds it, bash/zsh/fish completions,
# the systemd service and timer, the demo manifest as an example, and maintainer scripts that make
# the `worker` system user and /var/cache/worker (kept on remove, gone on purge). Then lintian,
# when installed, checks it. WORKER_SCRATCH names the build folder (default .build).
#   scripts/make-deb.sh && sudo dpkg -i dist/worker_*.deb
#
# lintian (run when installed, as CI does) reports no errors or warnings for it; the maintainer
# address is a placeholder until the project has a public one. The same commit gives the same
# bytes: every time in it is SOURCE_DATE_EPOCH (default the commit's time), dpkg-deb clamps the
# members' times to it and sorts them, and nothing depends on the file system it is built on.
set -euo pipefail
cd "$(dirname "$0")/.."
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
ensure_packages "${build_packages[@]}"

scratch="${WORKER_SCRATCH:-.build}"
# The same commit gives the same bytes wherever it is built: no build path in the binary
# (BoringSSL's __FILE__ strings, Swift's #filePath), no Swift debug info (stripped anyway), no
# build ID (the linker hashes every section into it); scripts/lib/strip-release.sh zeroes the one
# section that differs from one compile to the next (.swift_modhash).
flags=(-c release --static-swift-stdlib --product worker --scratch-path "$scratch"
  -Xcc "-ffile-prefix-map=$PWD=." -Xswiftc -file-prefix-map -Xswiftc "$PWD=." -Xswiftc -gnone
  -Xlinker --build-id=none)
swift build "${flags[@]}"
binary="$(swift build "${flags[@]}" --show-bin-path)/worker"
version="$("$binary" --version | awk '{print $NF}')"
arch="$(dpkg --print-architecture)"
name="worker_${version}_${arch}"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"
install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$root/lib/systemd/system" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/doc/worker/examples/demo"
bash scripts/lib/strip-release.sh "$binary" "$root/usr/bin/worker"
gzip -9n <docs/worker.1 >"$root/usr/share/man/man1/worker.1.gz"
# bash-completion sources the file: no #! line (lintian: bash-completion-with-hashbang).
"$binary" completion bash | sed '1{/^#!/d}' >"$root/usr/share/bash-completion/completions/worker"
"$binary" completion zsh >"$root/usr/share/zsh/vendor-completions/_worker"
"$binary" completion fish >"$root/usr/share/fish/vendor_completions.d/worker.fish"
for unit in worker-sync.service worker-sync.timer worker-verify.service worker-verify.timer; do
  sed 's|/usr/local/bin/worker|/usr/bin/worker|' "deploy/systemd/$unit" >"$root/lib/systemd/system/$unit"
done
install -m 0644 manifests/demo.yaml "$root/usr/share/doc/worker/examples/demo.yaml"
install -m 0644 manifests/demo/*.png "$root/usr/share/doc/worker/examples/demo/"
install -m 0644 packaging/debian/copyright "$root/usr/share/doc/worker/copyright"
printf 'worker (%s) unstable; urgency=medium\n\n  * Built from the worker repository; see its git log.\n\n -- worker maintainers <maintainers@example.org>  %s\n' \
  "$version" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")" | gzip -9n >"$root/usr/share/doc/worker/changelog.gz"
find "$root/usr" -type f -exec chmod 0644 {} + && chmod 0755 "$root/usr/bin/worker"
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"

# The shared libraries the binary loads: libc's family (the newest symbol versions it uses set the
# minimum versions), libyaml and SQLite from ldd, and libcurl, which it opens at run time (dlopen:
# ldd does not list it) and needs at 7.80 or later.
# As dpkg-gencontrol counts it: each file's KiB rounded up, one for each folder (du's answer
# depends on the file system's blocks).
installed_size="$(cd "$root" && find usr lib \( -type f -printf '%s\n' \) -o \( -type d -printf '1024\n' \) \
  | awk '{ total += int(($1 + 1023) / 1024) } END { print total }')"
glibc="$(objdump -T "$binary" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
cat >"$root/DEBIAN/control" <<CONTROL
Package: worker
Version: $version
Architecture: $arch
Maintainer: worker maintainers <maintainers@example.org>
Installed-Size: $installed_size
Depends: libc6 (>= $glibc), libstdc++6 (>= 11), libgcc-s1, libcurl4 (>= 7.80.0), libyaml-0-2, libsqlite3-0, adduser
Section: net
Priority: optional
Description: keeps a local cache of remote files in step with manifests
 worker syncs a cache directory with YAML manifests of URL and content-hash
 pairs: it downloads only what is missing or whose hash changed, verifies
 every byte it keeps, stores each distinct content once, and writes a report.
 It runs from the shipped systemd timer, cron, CI jobs, or by hand.
CONTROL
(cd "$root" && find usr lib -type f -exec md5sum {} + | sort -k2) >"$root/DEBIAN/md5sums"

mkdir -p dist
# xz at level 3: 3.6 s and 6.4 MB here, against 13 s and 5.8 MB at dpkg's default level 6.
dpkg-deb --root-owner-group -Zxz -z3 --build "$root" "dist/$name.deb" >/dev/null
echo "built dist/$name.deb"
if command -v lintian >/dev/null; then
  # Errors and warnings fail the build.
  lintian --fail-on error,warning "dist/$name.deb"
fi
