#!/usr/bin/env bash
# Installs the Debian packages the benchmark suites need, given as "command:package" pairs (a
# path instead of a command checks that file). Sourced by run.sh and run-network.sh.
install_missing() {
  local missing=() pair check package
  for pair in "$@"; do
    check="${pair%%:*}"; package="${pair#*:}"
    if [[ $check == /* ]]; then [[ -e $check ]] || missing+=("$package")
    else command -v "$check" >/dev/null 2>&1 || missing+=("$package"); fi
  done
  ((${#missing[@]})) || return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  # The nginx package starts a system nginx on port 80; the suites run their own.
  $sudo systemctl stop nginx >/dev/null 2>&1 || true
}
