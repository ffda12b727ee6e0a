#!/usr/bin/env bash
# BENCHMARKS.md from scratch: builds worker as it ships (release, the Swift runtime linked in),
# then runs each bench through Benchmarks/publish.py, which writes what the bench printed into its
# section of the page with the command that reruns it and the machine it ran on.
#
#   Benchmarks/results.sh              # every section, about 90 minutes
#   Benchmarks/results.sh sftp fleet   # only these sections (the names below)
#
# Each bench installs or names what it needs (nginx, aria2c, hyperfine, rclone, skopeo, ORAS, …);
# Benchmarks/README.md says what each measures and how.
set -euo pipefail
cd "$(dirname "$0")/.."

worker=.build/release/worker
publish() { python3 Benchmarks/publish.py "$@"; }
# shellcheck source=scripts/lib/venvs.sh
source scripts/lib/venvs.sh
# python-tuf's client for the fleet job's TUF row (cryptography signs its repository); moto and ORAS (the test tools) for s3 and oci.
bench_venv="$cache_home/worker-bench-venv"

declare -A sections=(
  [bench]="publish --name bench.py --title 'Files from one origin: cold, warm, one changed of 100k, a plan of 1M (aria2c, curl, cp)' -- python3 Benchmarks/bench.py --worker $worker"
  [scale]="publish --title 'Cost against the number of entries (curl)' -- python3 Benchmarks/scale.py --worker $worker"
  [instructions]="publish --title 'Instructions of a cold sync (curl)' -- python3 Benchmarks/instructions.py --worker $worker"
  [network]="publish --title 'Network profiles: TLS, HTTP/2, latency, a small backlog (curl, aria2c)' -- python3 Benchmarks/network.py --worker $worker"
  [tree]="publish --title 'A tree kept in step (cp -al)' -- python3 Benchmarks/tree.py --worker $worker"
  [signed]="publish --title 'A signed remote manifest that did not change' -- python3 Benchmarks/signed_manifest.py --worker $worker"
  [fleet]="publish --title 'The fleet job: a signed manifest, one reader (wget, rclone, python-tuf)' -- python3 Benchmarks/fleet.py --worker $worker --tuf-python $bench_venv/bin/python"
  [s3]="publish --title 'S3 buckets (rclone)' -- python3 Benchmarks/s3.py --worker $worker"
  [oci]="publish --title 'OCI artifacts, direct and through a pull-through mirror (skopeo, ORAS)' -- python3 Benchmarks/oci.py --worker $worker"
  [sftp]="publish --title 'An SFTP server (rclone, curl)' -- python3 Benchmarks/sftp.py --worker $worker --runs 2"
  [origins]="publish --title 'Mirrors, and machines that start together on one tier' -- python3 Benchmarks/origins.py --worker $worker"
  [remote]="publish --title 'A shared tier (curl)' -- python3 Benchmarks/remote.py --worker $worker"
  [action]="publish --title 'The GitHub Action (actions/cache and a curl loop)' -- python3 Benchmarks/action.py --worker $worker"
)
order=(bench scale instructions network tree origins remote signed fleet s3 oci sftp action)

# shellcheck source=Benchmarks/install-tools.sh
source Benchmarks/install-tools.sh
install_missing /usr/sbin/nginx:nginx-light aria2c:aria2 curl:curl hyperfine:hyperfine /usr/bin/time:time \
  python3:python3 valgrind:valgrind rclone:rclone wget:wget minisign:minisign skopeo:skopeo openssl:openssl \
  /usr/lib/nginx/modules/ngx_http_lua_module.so:libnginx-mod-http-lua
ensure_venv "$test_venv" "${test_tools[@]}"
ensure_venv "$bench_venv" tuf==7.0.1 cryptography==50.0.2
swift build -c release --static-swift-stdlib --product worker >&2

chosen=("$@")
[ ${#chosen[@]} -gt 0 ] || chosen=("${order[@]}")
for name in "${chosen[@]}"; do
  [ -n "${sections[$name]:-}" ] || { echo "no section $name (sections: ${order[*]})" >&2; exit 2; }
done
# A bench that fails leaves its section as it was; the others still run.
failed=()
for name in "${chosen[@]}"; do
  echo "== $name" >&2
  eval "${sections[$name]}" || failed+=("$name")
done
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]} (their sections left as they were)" >&2; exit 1; }
