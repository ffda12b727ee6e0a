#!/usr/bin/env bash
# Validates deploy/ as far as this machine can: systemd units (systemd-analyze verify, pointed at
# the built binary), YAML well-formedness and the keys each file must have (Kubernetes, GitHub
# Actions, GitLab CI), the cron line's shape, and shellcheck of the project's scripts.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
status=0
fail() { echo "FAIL: $*"; status=1; }

worker="$(swift build --show-bin-path 2>/dev/null)/worker"
if command -v systemd-analyze >/dev/null; then
  units="$(mktemp -d)"
  sed "s|/usr/local/bin/worker|$worker|" deploy/systemd/worker-sync.service >"$units/worker-sync.service"
  cp deploy/systemd/worker-sync.timer "$units/"
  if out=$(systemd-analyze verify "$units/worker-sync.service" "$units/worker-sync.timer" 2>&1); then
    echo "ok: systemd units"
  else
    fail "systemd-analyze: $out"
  fi
  rm -rf "$units"
else
  echo "skip: systemd-analyze not installed"
fi

python3 - <<'PY' || status=1
import sys, yaml
checks = {
    "deploy/kubernetes/cronjob.yaml": lambda d: d["kind"] == "CronJob" and d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0] == "sync",
    "deploy/kubernetes/indexed-job.yaml": lambda d: d["spec"]["completionMode"] == "Indexed"
        and str(d["spec"]["completions"]) == next(e["value"] for e in d["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "JOB_COMPLETION_COUNT"),
    "deploy/github-actions/worker-sync.yml": lambda d: "sync" in d["jobs"] and any("actions/cache" in s.get("uses", "") for s in d["jobs"]["sync"]["steps"]),
    "deploy/gitlab-ci/worker-sync.gitlab-ci.yml": lambda d: d["worker-sync"]["artifacts"]["reports"]["junit"] == "junit.xml",
}
bad = 0
for path, check in checks.items():
    try:
        docs = list(yaml.safe_load_all(open(path)))
        assert len(docs) == 1 and check(docs[0]), "unexpected content"
        print(f"ok: {path}")
    except Exception as error:
        print(f"FAIL: {path}: {error}")
        bad = 1
sys.exit(bad)
PY

# m h dom mon dow user command
if grep -Eq '^[^#[:space:]]+ [^ ]+ [^ ]+ [^ ]+ [^ ]+ [a-z_][a-z0-9_-]* .*worker sync' deploy/cron/worker.cron; then
  echo "ok: deploy/cron/worker.cron"
else
  fail "deploy/cron/worker.cron: not '5 time fields, user, command'"
fi

if command -v shellcheck >/dev/null; then
  if shellcheck .ci/run scripts/*.sh Benchmarks/run.sh; then echo "ok: shellcheck"; else fail "shellcheck"; fi
else
  echo "skip: shellcheck not installed (apt-get install shellcheck)"
fi
exit $status
