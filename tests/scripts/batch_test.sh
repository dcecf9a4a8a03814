#!/usr/bin/env bash
# Batch mode end to end: batch -> captures, summary, JUnit; show FILE; report --html/--text; --out;
# bad configs and bad captures exit 2 with a path.
# Usage: batch_test.sh THUNDER_VIZ SOURCE_DIR
set -uo pipefail
tool=$1 src=$2
py=/usr/bin/python3
failures=0
passes=0
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
ok() { passes=$((passes + 1)); }

# expect CODE PATTERN -- ARGS...: runs the tool, checks the exit code and that PATTERN appears in its output.
expect() {
  local code=$1 pattern=$2
  shift 3
  "$tool" "$@" > "$tmp/out" 2>&1
  local got=$?
  if [[ $got -ne $code ]] || ! grep -qE -- "$pattern" "$tmp/out"; then
    fail "thunder-viz $* -> exit $got (want $code), pattern '$pattern'"
    sed 's/^/    /' "$tmp/out" | head -20
  else
    ok
  fi
}

cat > "$tmp/config.json" <<'JSON'
{"models": ["linear"], "orders": ["jit", "jit,ddp", "ddp,jit"], "world_sizes": [1, 2], "devices": ["cpu"]}
JSON

# The batch itself: reorders are equivalent, so exit 0; two cases of three pipelines.
expect 0 "2 case\(s\), 6 pipeline\(s\): 6 ok" -- batch "$tmp/config.json" --out-dir "$tmp/a" --junit "$tmp/a/junit.xml"
for f in linear_w1_cpu linear_w2_cpu; do
  [[ -f $tmp/a/$f.tvz.json ]] && ok || fail "missing capture $f.tvz.json"
  expect 0 "model linear, 3 pipeline\(s\)" -- show "$tmp/a/$f.tvz.json"
done
grep -qE '^linear_w2_cpu +ddp,jit +passed; vs P1 \[jit,ddp\]: equivalent$' "$tmp/a/summary.txt" && ok || fail "summary.txt lacks the ddp,jit verdict"
[[ $(grep -c '^linear_w' "$tmp/a/summary.txt") -eq 6 ]] && ok || fail "summary.txt should have 6 pipeline lines"
$py -c "
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall('.//testcase')
assert len(cases) == 6, len(cases)
assert not root.findall('.//failure'), 'unexpected failures'
" "$tmp/a/junit.xml" && ok || fail "junit.xml is not well-formed or has the wrong testcase count"

# show FILE with selections, and bad selections listing the valid values.
expect 0 "=== backward stage 0/[0-9]+: Grad transform pass" -- show "$tmp/a/linear_w2_cpu.tvz.json" --pipeline 1 --trace backward --stage 0
expect 0 "=== forward stage [0-9]+/[0-9]+: Fusion" -- show "$tmp/a/linear_w2_cpu.tvz.json" --pipeline 2 --trace forward --stage Fusion --depth 0
expect 2 "--pipeline 7.*valid values: 0 \[jit\], 1 \[jit,ddp\], 2 \[ddp,jit\]" -- show "$tmp/a/linear_w2_cpu.tvz.json" --pipeline 7
expect 2 "--stage Nope.*valid stages: 0 'acquisition'" -- show "$tmp/a/linear_w2_cpu.tvz.json" --trace forward --stage Nope
expect 2 "exactly one of FILE" -- show "$tmp/a/linear_w1_cpu.tvz.json" --model linear
expect 0 "def computation" -- show --model linear --trace computation

# Reports: one self-contained page; the text report is the same for two runs.
expect 0 "wrote .*report.html" -- report "$tmp/a/linear_w2_cpu.tvz.json" --html "$tmp/report.html" --text "$tmp/a.txt"
if grep -qiE '<(script|link|img|iframe)[^>]+(src|href)=|https?://' "$tmp/report.html"; then fail "report.html references something outside"; else ok; fi
for stage in acquisition "Dead Code Elimination" "Common Subexpression Elimination" "ddp pass" "Delete Last Used"; do
  grep -qF "$stage" "$tmp/report.html" && ok || fail "report.html lacks stage '$stage'"
done
grep -qF 'hide-unchanged' "$tmp/report.html" && grep -qF '>unchanged<' "$tmp/report.html" && ok || fail "report.html lacks badges or the hide-unchanged switch"
expect 0 "6 ok" -- batch "$tmp/config.json" --out-dir "$tmp/b"
expect 0 "wrote .*b.txt" -- report "$tmp/b/linear_w2_cpu.tvz.json" --text "$tmp/b.txt"
diff -u "$tmp/a.txt" "$tmp/b.txt" > "$tmp/text.diff" && ok || { fail "report --text differs between two runs"; head -20 "$tmp/text.diff"; }

# Bad configs: exit 2 naming the config and the JSON path, before anything runs.
printf '{"models": ["linear", "nope"]}' > "$tmp/bad_model.json"
expect 2 "bad_model.json: /models/1: unknown model 'nope'; valid models: linear, mlp" -- batch "$tmp/bad_model.json" --out-dir "$tmp/c"
printf '{"models": ["linear"], "orders": ["jit,dpp"]}' > "$tmp/bad_order.json"
expect 2 "bad_order.json: /orders/0: unknown transform 'dpp'.*valid transforms: jit, " -- batch "$tmp/bad_order.json" --out-dir "$tmp/c"
printf '{"models": ["linear"],\n "orders": [jit]}' > "$tmp/bad_json.json"
expect 2 "bad_json.json: \(document\): not valid JSON at line 2" -- batch "$tmp/bad_json.json" --out-dir "$tmp/c"
printf '{"models": [{"name": "gpt", "params": {"layerz": 1}}]}' > "$tmp/bad_param.json"
expect 2 "bad_param.json: /models/0/params: .*layerz" -- batch "$tmp/bad_param.json" --out-dir "$tmp/c"
printf '{"models": ["linear"], "semantics": ["lazy", "thunder-2023"]}' > "$tmp/bad_mode.json"
expect 2 "bad_mode.json: /semantics/1: .*thunder-2023.*valid modes: lazy, thunder-2024-03" -- batch "$tmp/bad_mode.json" --out-dir "$tmp/c"
printf '{"models": [{"name": "gpt", "params": {"layers": 10000, "d_model": 16384}}], "orders": ["jitt"]}' > "$tmp/huge.json"
expect 2 "huge.json: /orders/0: unknown transform 'jitt'" -- batch "$tmp/huge.json" --out-dir "$tmp/c"  # checked without its weights
[[ ! -e $tmp/c ]] && ok || fail "a bad config still created the output folder"
# A device this machine lacks is a config error too, as `compare --device cuda` is (only where there is no GPU).
printf '{"models": ["linear"], "devices": ["cpu", "cuda"]}' > "$tmp/cuda.json"
if "$tool" compare --model linear --order jit --order jit --device cuda > /dev/null 2>&1; [[ $? -eq 2 ]]; then
  expect 2 "cuda.json: /devices/1: --device cuda:0: .*take \"cuda:0\" out of \"devices\"" -- batch "$tmp/cuda.json" --out-dir "$tmp/c"
  [[ $(grep -c "no CUDA\|visible" "$tmp/out") -eq 1 ]] && ok || fail "the missing device is not said once: $(cat "$tmp/out")"
fi
# An output the batch cannot write is refused before the first case runs.
mkdir -p "$tmp/d" && mkfifo "$tmp/d/summary.txt"
expect 2 "cannot write .*summary.txt: it is a named pipe" -- batch "$tmp/config.json" --out-dir "$tmp/d"
[[ -z $(find "$tmp/d" -name '*.tvz.json') ]] && ok || fail "the batch ran before its summary.txt was refused"

# The seed in every semantics mode: lazy passes, thunder-2024-03 fails jit,ddp the seed's way,
# thunder-2026-01 refuses ddp before jit; one capture per mode (exit 1: not every pipeline is ok).
expect 1 "linear_w2_cpu_thunder-2024-03.*jit,ddp.*(failed|FAIL)" -- batch "$src/samples/batch/seed_semantics.json" --out-dir "$tmp/s"
for f in linear_w2_cpu linear_w2_cpu_thunder-2024-03 linear_w2_cpu_thunder-2026-01; do
  [[ -f $tmp/s/$f.tvz.json ]] && ok || fail "seed_semantics: missing capture $f.tvz.json"
done
grep -E "linear_w2_cpu_thunder-2026-01.*ddp,jit.*refused" "$tmp/s/summary.txt" > /dev/null && ok || { fail "thunder-2026-01 does not refuse ddp,jit"; cat "$tmp/s/summary.txt"; }
# A line says each reason once: the failure's first line is in the verdict, not repeated after it.
grep -E "ValueError: None had an unexpected type.*: ValueError: None had an unexpected type" "$tmp/s/summary.txt" > /dev/null &&
  fail "summary.txt repeats a reason: $(grep ValueError "$tmp/s/summary.txt")" || ok

# A damaged capture: exit 2 with the file and a JSON path.
head -c 3000 "$tmp/a/linear_w1_cpu.tvz.json" > "$tmp/truncated.tvz.json"
expect 2 "truncated.tvz.json: .*(not valid JSON|/)" -- show "$tmp/truncated.tvz.json"
$py -c "
import json, sys
d = json.load(open(sys.argv[1])); d['pipelines'][0]['stages']['forward'][0]['lines'] = 3
json.dump(d, open(sys.argv[2], 'w'))" "$tmp/a/linear_w1_cpu.tvz.json" "$tmp/typed.tvz.json"
expect 2 "typed.tvz.json: /pipelines/0/stages/forward/0/lines: expected an array" -- show "$tmp/typed.tvz.json"

# --out to an unwritable place: exit 2 with the path and the reason, an existing file untouched.
echo "keep me" > "$tmp/keep.tvz.json"
expect 2 "cannot write .*keep.tvz.json/x.tvz.json.*Not a directory" -- run --model linear --out "$tmp/keep.tvz.json/x.tvz.json"
# A write that fails half-way (file size limit, EFBIG): works as root too.
for args in "run --model linear" "compare --model linear --order jit,ddp --order ddp,jit --world 2" "rules --model linear --world 1"; do
  # shellcheck disable=SC2086
  (ulimit -f 1; trap '' XFSZ; exec "$tool" $args --out "$tmp/keep.tvz.json") > /dev/null 2> "$tmp/err"
  rc=$?
  if [[ $rc -eq 2 ]] && grep -q "cannot write .*keep.tvz.json" "$tmp/err"; then ok; else fail "$args --out (size limit) -> exit $rc: $(cat "$tmp/err")"; fi
done
if [[ $(id -u) -ne 0 ]]; then
  mkdir -p "$tmp/ro" && cp "$tmp/keep.tvz.json" "$tmp/ro/run.tvz.json" && chmod a-w "$tmp/ro"
  expect 2 "cannot write .*ro/run.tvz.json.*Permission denied" -- run --model linear --out "$tmp/ro/run.tvz.json"
fi
[[ $(cat "$tmp/keep.tvz.json") == "keep me" ]] && ok || fail "--out changed an existing file"
[[ -z $(find "$tmp" -maxdepth 1 -name '.keep.tvz.json.tmp-*') ]] && ok || fail "--out left a temporary file behind"
expect 0 "passed" -- run --model linear --out "$tmp/run.tvz.json"
expect 0 "model linear, 1 pipeline" -- show "$tmp/run.tvz.json"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
