#!/usr/bin/env bash
# The network profiles (Benchmarks/network.py): HTTPS HTTP/1.1 and HTTP/2 with a test CA, +20 ms
# and +100 ms per response, a 300-file sync, and a small-backlog HTTP/1.0 server, beside curl and
# aria2c, and the libcurl prototype. Installs what is missing (Debian packages), builds worker in
# release mode (and the prototype), runs.
# Knobs (env): ROUNDS (2), RUNS (2), WORKER_BENCH_DIR (/tmp/worker-bench), PROBE (1; 0 leaves the
# prototype out); arguments go to network.py.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=Benchmarks/install-tools.sh
source Benchmarks/install-tools.sh
install_missing /usr/sbin/nginx:nginx-light /usr/lib/nginx/modules/ngx_http_lua_module.so:libnginx-mod-http-lua \
  openssl:openssl aria2c:aria2 curl:curl hyperfine:hyperfine python3:python3

swift build -c release --static-swift-stdlib --product worker >&2
# The libcurl prototype (Benchmarks/curlprobe) runs beside worker unless PROBE=0.
probe=()
if [ "${PROBE:-1}" != 0 ]; then
  install_missing curl-config:libcurl4-openssl-dev /usr/include/openssl/sha.h:libssl-dev \
    pkg-config:pkg-config
  swift build -c release --package-path Benchmarks/curlprobe >&2
  probe=(--probe Benchmarks/curlprobe/.build/release/curlprobe)
fi
exec python3 Benchmarks/network.py "${probe[@]}" "$@"
