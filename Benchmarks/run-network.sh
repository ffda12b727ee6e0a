#!/usr/bin/env bash
# The network profiles (Benchmarks/network.py): HTTPS HTTP/1.1 and HTTP/2 with a test CA, +20 ms
# and +100 ms per response, a 300-file sync, and a small-backlog HTTP/1.0 server, beside curl and
# aria2c. Installs what is missing (Debian packages), builds worker in release mode, runs.
# Knobs (env): ROUNDS (2), RUNS (2), WORKER_BENCH_DIR (/tmp/worker-bench); arguments go to network.py.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
[[ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ]] || missing+=(libnginx-mod-http-lua)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v aria2c >/dev/null 2>&1 || missing+=(aria2)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v hyperfine >/dev/null 2>&1 || missing+=(hyperfine)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  # The package starts a system nginx on port 80; the benches run their own.
  $sudo systemctl stop nginx >/dev/null 2>&1 || true
fi

swift build -c release --static-swift-stdlib --product worker >&2
exec python3 Benchmarks/network.py "$@"
