#!/usr/bin/env bash
# Builds the Debian package (scripts/make-deb.sh; or takes WORKER_DEB) and checks it as an administrator would use it:
# `dpkg -i`, `worker --version`, `man -w worker`, `systemd-analyze verify` on the installed units,
# the demo synced as the `worker` user into /var/cache/worker, then remove (the cache and the user
# stay) and purge (both gone). Run as root on a machine where the package may be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "FAIL: $*" >&2; exit 1; }

# WORKER_DEB: a package already built (CI's release rehearsal); it is checked by lintian here.
if [ -n "${WORKER_DEB:-}" ]; then
  deb=$WORKER_DEB
  [ -f "$deb" ] || fail "WORKER_DEB=$deb is not a file"
  lintian --fail-on error,warning "$deb" || fail "lintian: $deb"
else
  # (Not `tee /dev/stderr`: reopening stderr truncates a log file it is redirected to.)
  built="$(bash scripts/make-deb.sh)"
  echo "$built"
  deb="$(sed -n 's/^built //p' <<<"$built")"
  [ -f "$deb" ] || fail "scripts/make-deb.sh built no package"
fi
dpkg -i "$deb"
trap 'dpkg --purge worker >/dev/null 2>&1 || true' EXIT

worker --version
man -w worker | grep -q 'worker.1' || fail "man -w worker"
systemd-analyze verify /lib/systemd/system/worker-sync.service /lib/systemd/system/worker-sync.timer \
  /lib/systemd/system/worker-verify.service /lib/systemd/system/worker-verify.timer \
  || fail "systemd-analyze verify on the installed units"
getent passwd worker >/dev/null || fail "no worker user"
[ "$(stat -c %U /var/cache/worker)" = worker ] || fail "/var/cache/worker is not the worker user's"
for completion in /usr/share/bash-completion/completions/worker /usr/share/zsh/vendor-completions/_worker \
  /usr/share/fish/vendor_completions.d/worker.fish; do
  [ -s "$completion" ] || fail "no $completion"
done

# The demo as the worker user, from the example the package ships.
runuser -u worker -- worker sync /usr/share/doc/worker/examples/demo.yaml --cache-dir /var/cache/worker --progress never
runuser -u worker -- worker verify --cache-dir /var/cache/worker
[ -f /var/cache/worker/index.sqlite ] || fail "the demo left no index"

dpkg --remove worker
[ -d /var/cache/worker ] || fail "remove deleted the cache"
getent passwd worker >/dev/null || fail "remove deleted the user"
dpkg --purge worker
[ ! -e /var/cache/worker ] || fail "purge left /var/cache/worker"
if getent passwd worker >/dev/null; then fail "purge left the worker user"; fi
[ ! -e /var/lib/worker ] || fail "purge left /var/lib/worker"

# An administrator's own user and cache directory, made before the package, survive a purge.
adduser --system --group --home /var/cache/worker --no-create-home --shell /usr/sbin/nologin worker >/dev/null
install -d -o worker -g worker -m 2750 /var/cache/worker
echo "the administrator's" >/var/cache/worker/note
dpkg -i "$deb" >/dev/null
dpkg --purge worker >/dev/null
[ -f /var/cache/worker/note ] || fail "purge deleted a cache directory the administrator made"
getent passwd worker >/dev/null || fail "purge deleted a worker user the administrator made"
rm -rf /var/cache/worker
deluser --system --quiet worker >/dev/null 2>&1 || true
delgroup --system --quiet worker >/dev/null 2>&1 || true
echo "ok: the Debian package installs, works, removes and purges (what it made only)"
