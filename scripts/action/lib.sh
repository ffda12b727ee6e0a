# shellcheck shell=bash
# Shared by the action's steps (action.yml): errors as workflow commands, outputs, the runtime
# libraries, and the manifests input expanded.

# An ::error:: annotation and exit 1. The message is escaped as the runner reads workflow
# commands (%, CR and LF), so no text in it can start a command of its own.
die() {
  echo "::error::$(command_text "$*")"
  exit 1
}

# TEXT escaped for a workflow command's message.
command_text() {
  local text=${1//'%'/%25}
  text=${text//$'\r'/%0D}
  printf '%s' "${text//$'\n'/%0A}"
}

# Sets a step output in the delimiter form, with a delimiter the value cannot hold: no newline in
# a value can add an output (a value holding the delimiter is refused).
output() {
  local file=${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run inside GitHub Actions}
  local delimiter
  delimiter="worker_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  [[ $2 != *"$delimiter"* ]] || die "the output $1 holds its own delimiter"
  printf '%s<<%s\n%s\n%s\n' "$1" "$delimiter" "$2" "$delimiter" >>"$file"
}

# As root, or through sudo when it needs no password.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo "$@"
  else
    die "needs root to run: $*"
  fi
}

# The libraries worker loads at run time (libcurl is opened with dlopen, so ldd does not list it),
# installed with apt when a simulation says something is missing.
# shellcheck disable=SC2034 # used by the scripts that source this one
runtime_depends="libcurl4 (>= 7.80.0), libyaml-0-2, libsqlite3-0"
ensure_runtime() {
  local depends=$1
  command -v apt-get >/dev/null 2>&1 || return 0
  installed "$depends" && return 0
  if apt-get satisfy -s "$depends" 2>/dev/null | grep -q '^Inst '; then
    echo "installing what worker needs: $depends"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get satisfy -y -qq --no-install-recommends "$depends"
  fi
}

# Whether dpkg has every package of DEPENDS ("name (>= version), name, …") installed at a version
# that satisfies it: milliseconds, where apt-get's simulation takes a second of CPU on each run.
installed() {
  local item name relation version found
  local -a items
  IFS=',' read -r -a items <<<"$1"
  for item in "${items[@]}"; do
    read -r name relation version <<<"${item//[()]/ }"
    [[ $name != *'|'* && -n $name ]] || return 1
    found="$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null)" || return 1
    [[ $found == "install ok installed "* ]] || return 1
    [ -z "$relation" ] || dpkg --compare-versions "${found##* }" "$relation" "$version" || return 1
  done
}

# manifests=(…): each word of ACTION_MANIFESTS, a glob pattern expanded in the workspace (a URL as
# it is). A pattern that matches nothing is an error naming it.
expand_manifests() {
  local pattern matched
  local -a words
  manifests=()
  read -r -d '' -a words <<<"${ACTION_MANIFESTS:-}" || true
  shopt -s nullglob
  for pattern in "${words[@]}"; do
    if [[ $pattern == *://* ]]; then
      manifests+=("$pattern")
      continue
    fi
    # shellcheck disable=SC2206 # the pattern is meant to be expanded
    matched=($pattern)
    ((${#matched[@]})) || die "the manifests input: nothing matches '$pattern' (in $PWD)"
    manifests+=("${matched[@]}")
  done
  shopt -u nullglob
  ((${#manifests[@]})) || die "the manifests input is empty"
}
