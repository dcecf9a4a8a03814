#!/usr/bin/env bash
# Fails when docs/composition-rules.md is not what `thunder-viz rules --world 4 --format markdown`
# computes now (4 ranks: hsdp on a 2 x 2 mesh).
# Usage: check_rules_doc.sh THUNDER_VIZ SOURCE_DIR
set -euo pipefail
tool=$1 src=$2
fresh=$(mktemp)
trap 'rm -f "$fresh"' EXIT
"$tool" rules --world 4 --format markdown > "$fresh"
if ! diff -u "$src/docs/composition-rules.md" "$fresh"; then
  echo "docs/composition-rules.md is stale: regenerate it with" >&2
  echo "  build/bin/thunder-viz rules --world 4 --format markdown > docs/composition-rules.md" >&2
  exit 1
fi
echo "docs/composition-rules.md is up to date"
