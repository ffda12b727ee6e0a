#!/usr/bin/env bash
# Puts worker on the job's PATH. With a version: its .deb, checked against the SHA-256 given or
# listed in the action's packaging/release-checksums.txt before anything in it is used, unpacked
# (no maintainer scripts run). Without: the binary the build cache restored, or a build of the
# action's own source with the runner's Swift.
set -euo pipefail
# shellcheck source=scripts/action/lib.sh
source "$GITHUB_ACTION_PATH/scripts/action/lib.sh"
bin_dir="${ACTION_BIN_DIR:?the build step set no bin-dir}"

if [ -n "${ACTION_VERSION:-}" ]; then
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no worker package for $(uname -m): leave the version input empty to build from source" ;;
  esac
  name="worker_${ACTION_VERSION}_${arch}.deb"
  sha="${ACTION_DEB_SHA256:-}"
  if [ -z "$sha" ]; then
    sha="$(awk -v name="$name" '$2 == name { print $1 }' "$GITHUB_ACTION_PATH/packaging/release-checksums.txt")"
    [ -n "$sha" ] || die "$name is not listed in this action's packaging/release-checksums.txt: use an action commit that lists it, or give deb-sha256"
  fi
  [[ $sha =~ ^[0-9a-f]{64}$ ]] || die "the SHA-256 for $name is not 64 lowercase hex digits"
  url="${ACTION_DEB_URL:-https://github.com/${GITHUB_ACTION_REPOSITORY:-}/releases/download/v$ACTION_VERSION/$name}"
  root="$(dirname "$(dirname "$bin_dir")")"
  deb="$RUNNER_TEMP/$name"
  echo "downloading $url"
  curl -fsSL --retry 3 --proto '=https,http' -o "$deb" "$url" || die "could not download $url"
  echo "$sha  $deb" | sha256sum --check --strict --quiet - \
    || { rm -f "$deb"; die "$name does not have the expected SHA-256 $sha: not installed"; }
  rm -rf "$root" && mkdir -p "$root"
  dpkg-deb -x "$deb" "$root"
  # The package's own Depends (less adduser, which only its maintainer scripts use).
  runtime_depends="$(dpkg-deb -f "$deb" Depends | sed -E 's/(, )?adduser//')"
  rm -f "$deb"
  [ -x "$bin_dir/worker" ] || die "$name holds no usr/bin/worker"
elif [ -x "$bin_dir/worker" ] && "$bin_dir/worker" --version >/dev/null 2>&1; then
  echo "worker restored from the build cache"
else
  # shellcheck source=scripts/lib/packages.sh
  source "$GITHUB_ACTION_PATH/scripts/lib/packages.sh"
  # shellcheck disable=SC2154 # build_packages is set by packages.sh
  ensure_packages "${build_packages[@]}"
  flags=(-c release --static-swift-stdlib --product worker --package-path "$GITHUB_ACTION_PATH"
    --scratch-path "$RUNNER_TEMP/worker-build-scratch")
  echo "building worker from the action's source: swift build ${flags[*]}"
  swift build "${flags[@]}"
  mkdir -p "$bin_dir"
  install -m 0755 "$(swift build "${flags[@]}" --show-bin-path)/worker" "$bin_dir/worker"
fi
ensure_runtime "$runtime_depends"
"$bin_dir/worker" --version
[[ $bin_dir != *$'\n'* ]] || die "the bin-dir holds a newline"
echo "$bin_dir" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
