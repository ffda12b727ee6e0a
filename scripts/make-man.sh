#!/usr/bin/env bash
# Regenerates docs/worker.1 (the manual, mdoc) from the command definitions, with
# swift-argument-parser's generate-manual plugin: the same source as --help and the completions;
# then tidied to render without warnings, with an EXIT STATUS from docs/EXIT-CODES.md
# (scripts/lib/tidy-man.py; CI runs `mandoc -T lint -W warning docs/worker.1`).
#   scripts/make-man.sh && man docs/worker.1
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
swift package --allow-writing-to-package-directory generate-manual --configuration debug \
  --date "${WORKER_MAN_DATE:-$(date -u +%Y-%m-%d)}" --output-directory "$out"
python3 scripts/lib/tidy-man.py "$out/worker.1" docs/EXIT-CODES.md
cp "$out/worker.1" docs/worker.1
echo "wrote docs/worker.1"
