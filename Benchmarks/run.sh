#!/usr/bin/env bash
# One command: install what is missing (Debian packages), build worker in release mode, generate
# the corpus, and run the suite. Results go to Benchmarks/results/<stamp>/summary.md and BENCHMARKS.md.
# Knobs (env): ROUNDS (3), RUNS (2), WORKER_BENCH_DIR (/tmp/worker-bench).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v aria2c >/dev/null 2>&1 || missing+=(aria2)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v hyperfine >/dev/null 2>&1 || missing+=(hyperfine)
[[ -x /usr/bin/time ]] || missing+=(time)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

# The shipped configuration (as deploy/docker/Dockerfile builds it): the Swift runtime linked in,
# which also starts faster (about 7 ms instead of 11 ms here).
swift build -c release --static-swift-stdlib --product worker >&2
exec python3 Benchmarks/bench.py --write BENCHMARKS.md "$@"
