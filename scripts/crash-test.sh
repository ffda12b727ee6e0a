#!/usr/bin/env bash
# The long crash test: `kill -9` worker sync at random moments N times (default 200) against a
# local test origin; after each kill `worker verify` checks the cache, and the next run completes.
# Prints: kills, corrupt objects, dangling rows, temp files left (and removed). The normal test run
# does the same with 20 kills.
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-200}"
swift build --build-tests >/dev/null
WORKER_CRASH_KILLS="$kills" swift test --skip-build --filter CrashTests 2>&1 | grep -E "crash test|✔|✘|recorded an issue"
