#!/usr/bin/env bash
# A long run of the chaos test (Tests/IntegrationTests/ChaosTests.swift): N random operations on
# one cache (syncs, get, gc, rm, clear, verify --repair, kill -9), then the cache checked whole.
#   scripts/chaos.sh 1000 42      # 1,000 operations, seed 42 (a seed repeats a run)
set -euo pipefail
cd "$(dirname "$0")/.."
operations="${1:-1000}"
seed="${2:-$RANDOM$RANDOM}"
echo "chaos: $operations operations, seed $seed"
WORKER_CHAOS_OPERATIONS="$operations" WORKER_CHAOS_SEED="$seed" exec scripts/test.sh --filter ChaosTests
