#!/usr/bin/env bash
# Fails when docs/composition-rules.md is not what `thunder-viz rules --format markdown` computes now.
# Usage: check_rules_doc.sh THUNDER_VIZ SOURCE_DIR
set -euo pipefail
tool=$1 src=$2
fresh=$(mktemp)
trap 'rm -f "$fresh"' EXIT
"$tool" rules --format markdown > "$fresh"
if ! diff -u "$src/docs/composition-rules.md" "$fresh"; then
  echo "docs/composition-rules.md is stale: regenerate it with" >&2
  echo "  build/bin/thunder-viz rules --format markdown > docs/composition-rules.md" >&2
  exit 1
fi
echo "docs/composition-rules.md is up to date"
