# shellcheck shell=bash
# Installs the Debian/Ubuntu packages a step needs when they are missing: with apt-get as root, or
# through sudo when it needs no password; otherwise it prints the one command to run and stops.
# Sourced by scripts/demo.sh, scripts/test.sh and .ci/run:
#   ensure_packages libyaml-dev libsqlite3-dev
ensure_packages() {
  local missing=() package
  for package in "$@"; do
    if command -v dpkg-query >/dev/null 2>&1; then
      dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
    else
      missing+=("$package")
    fi
  done
  ((${#missing[@]})) || return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "worker needs these Debian/Ubuntu packages, or your system's equivalents: ${missing[*]}" >&2
    echo "(libyaml, SQLite 3 and libcurl with their headers, pkg-config)" >&2
    exit 1
  fi
  local run=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      run=(sudo)
    else
      echo "worker needs packages that are not installed. Run:" >&2
      echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${run[@]}" apt-get update -qq
  "${run[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# What building worker needs: the headers of the three system libraries it uses, and pkg-config
# to find them.
# shellcheck disable=SC2034
build_packages=(pkg-config libyaml-dev libsqlite3-dev libcurl4-openssl-dev)
# What the test suite needs beyond that: the openssl command (the TLS tests make a certificate),
# script(1) (the terminal progress test), nginx (its WebDAV module is the shared tier of
# RemoteCacheTests; with http2 over TLS, the origin of HTTP2Tests), curl (a HEAD in HTTP2Tests)
# util-linux (unshare, setpriv, prlimit for the tests that run as other users or mount), and
# apache2 and rclone (Apache's mod_dav and `rclone serve webdav`: the shared tier on the WebDAV
# servers that want their collections made), Python with venv (moto's S3 server, from PyPI), and
# minisign and ssh-keygen (SignedManifestTests' signatures are made by the real tools), and
# docker-registry (distribution 2.8) with htpasswd from apache2-utils (RegistryTests' registries),
# fuse3 (PowerCutTests' lossyfs, a FUSE file system that forgets what was not synced), and
# openssh-server (SFTPTests' SFTP servers, sshd on loopback).
# shellcheck disable=SC2034
test_packages=(openssl bsdutils nginx curl util-linux apache2 apache2-utils rclone python3 python3-venv minisign openssh-client
  docker-registry fuse3 openssh-server)
