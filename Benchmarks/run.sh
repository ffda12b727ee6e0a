#!/usr/bin/env bash
# One command: install what is missing (Debian packages), build worker in release mode, generate
# the corpus, and run the suite. Results go to Benchmarks/results/<stamp>/summary.md and the
# terminal; `Benchmarks/results.sh bench` runs the same and writes its section of BENCHMARKS.md.
# Knobs (env): ROUNDS (3), RUNS (2), WORKER_BENCH_DIR (/tmp/worker-bench).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=Benchmarks/install-tools.sh
source Benchmarks/install-tools.sh
install_missing /usr/sbin/nginx:nginx-light aria2c:aria2 curl:curl hyperfine:hyperfine /usr/bin/time:time python3:python3

# The shipped configuration (as deploy/docker/Dockerfile builds it): the Swift runtime linked in,
# which also starts faster (about 7 ms instead of 11 ms here).
swift build -c release --static-swift-stdlib --product worker >&2
exec python3 Benchmarks/bench.py "$@"
