#!/usr/bin/env bash
# The sync: a restored cache is verified first (one verify --repair cannot fix is dropped), then
# `worker sync` with the inputs; its Markdown summary goes to $GITHUB_STEP_SUMMARY (worker does
# that inside GitHub Actions), its counts to the step's outputs (read from the --metrics file).
# A cache restored from another key's save (a restore-keys prefix: other manifests, maybe another
# ref's bytes) serves only what the manifests pin by hash: entries without one are downloaded
# again (--refresh-unpinned) and rows no manifest names are dropped (--prune --force). The step
# itself succeeds: the action's last step exits with worker's code, after the cache is saved —
# only when the sync changed it or it was not restored under this key (output save).
set -euo pipefail
# shellcheck source=scripts/action/lib.sh
source "$GITHUB_ACTION_PATH/scripts/action/lib.sh"
expand_manifests
cache="${ACTION_CACHE_DIR:-.worker-cache}"
report="${ACTION_REPORT:-$RUNNER_TEMP/worker-report.json}"
metrics="$RUNNER_TEMP/worker-metrics.prom"

restored="${ACTION_RESTORED_KEY:-}"
key="${ACTION_KEY:?the cache key step set no key}"
own_save=false
[[ $restored != "$key" && $restored != "$key"-* ]] || own_save=true
if [ -d "$cache" ]; then
  worker verify --cache-dir "$cache" --quiet \
    || worker verify --repair --cache-dir "$cache" --quiet \
    || { echo "::warning::the restored cache could not be repaired; starting afresh"; rm -rf "$cache"; }
fi

args=(sync --cache-dir "$cache" --report "$report" --metrics "$metrics" --progress never)
# The tier's URL may carry a credential: handed over in worker's environment, never on its
# command line (which other users of the runner can read in /proc).
[ -z "${ACTION_REMOTE_CACHE:-}" ] || export WORKER_REMOTE_CACHE="$ACTION_REMOTE_CACHE"
[ -z "${ACTION_TREE:-}" ] || args+=(--tree "$ACTION_TREE")
if [ -n "${ACTION_ARGS:-}" ]; then
  read -r -d '' -a extra <<<"$ACTION_ARGS" || true
  args+=("${extra[@]}")
fi
if [ -n "$restored" ] && ! $own_save; then
  echo "the cache was restored from $restored, not this key's: entries without a hash are downloaded again, rows these manifests do not name dropped"
  args+=(--refresh-unpinned --prune --force)
fi
code=0
worker "${args[@]}" -- "${manifests[@]}" || code=$?
output code "$code"

# Counts from the metrics file: worker_sync_entries{manifests="avatars",status="added"} 5
count() {
  awk -v label="status=\"$1\"}" 'index($1, "worker_sync_entries{") == 1 && index($1, label) { sum += $2 } END { print sum + 0 }' "$metrics"
}
if [ -f "$metrics" ]; then
  output added "$(count added)"
  output updated "$(count updated)"
  output failed "$(count failed)"
fi
[ ! -f "$report" ] || output report "$(realpath "$report")"
# Saved when the sync ran to its end (0, or 1: some entries failed) and changed the cache, or when
# the cache was not this key's own: never a cache the sync did not get to clean.
save=false
if [[ $code == 0 || $code == 1 ]] && [ -f "$metrics" ]; then
  if ! $own_save || (($(count added) + $(count updated) + $(count reused) + $(count removed) > 0)); then save=true; fi
fi
output save "$save"
$save || echo "the cache is unchanged: not saved again"
case "$code" in
  0) ;;
  1) echo "::warning::some entries failed; the cache keeps what was downloaded (see the report)" ;;
  3) echo "::error::another run holds the cache lock" ;;
  4) echo "::error::the cache could not be used; it is not saved, so the next run starts afresh" ;;
  *) echo "::error::worker sync exited $code" ;;
esac
