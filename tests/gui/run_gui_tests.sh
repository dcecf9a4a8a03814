#!/usr/bin/env bash
# GUI tests under a private Xvfb: every panel renders, screenshots are non-blank and differ,
# the scripted driver reorders transforms and runs, keys step through stages, a broken capture
# shows an error without killing the window, no display gives exit 2.
# Usage: run_gui_tests.sh THUNDER_VIZ TV_GUI_APP TV_GUI_CHECK FIXTURES_DIR OUT_DIR
# Exit: 0 all passed, 1 a failure, 77 skipped (Xvfb not installed).
set -u
THUNDER_VIZ=$1 GUI_APP=$2 CHECK=$3 FIXTURES=$4 OUT=$5

if ! command -v Xvfb >/dev/null 2>&1; then
  echo "SKIP: Xvfb is not installed (apt-get install xvfb); the GUI tests need an X server"
  exit 77
fi

# The GUI binary: thunder-viz when its main registers `gui`, else the test driver with the same commands.
GUI=$GUI_APP
if "$THUNDER_VIZ" --help 2>/dev/null | grep -qE '^ +gui( |$)'; then GUI=$THUNDER_VIZ; fi
echo "GUI binary: $GUI"

rm -rf "$OUT" && mkdir -p "$OUT"

# A free display number, then wait until the server accepts connections.
for n in $(seq 90 190); do
  if [ ! -e "/tmp/.X$n-lock" ] && [ ! -e "/tmp/.X11-unix/X$n" ]; then DISPLAY_NUM=$n; break; fi
done
Xvfb ":$DISPLAY_NUM" -screen 0 1600x1000x24 -nolisten tcp >"$OUT/xvfb.log" 2>&1 &
XVFB_PID=$!
trap 'kill $XVFB_PID 2>/dev/null; wait $XVFB_PID 2>/dev/null' EXIT
export DISPLAY=":$DISPLAY_NUM"
for _ in $(seq 1 100); do
  [ -e "/tmp/.X11-unix/X$DISPLAY_NUM" ] && "$GUI" gui --frames 1 --model linear >/dev/null 2>&1 && break
  kill -0 $XVFB_PID 2>/dev/null || { echo "FAIL: Xvfb did not start"; cat "$OUT/xvfb.log"; exit 1; }
  sleep 0.2
done
echo "Xvfb on $DISPLAY"

FAILED=0 PASSED=0
pass() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $1"; }
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@" >>"$OUT/checks.log" 2>&1; then pass "$name"; else fail "$name"; tail -3 "$OUT/checks.log"; fi
}
json() { "$CHECK" json "$@"; }
script() {  # script FILE JSON
  printf '%s\n' "$2" >"$1"
}

PANELS="stages trace diff order replay rules"

# 1. Every panel renders the Thunder fixtures (imported) and a live linear run for frames without error.
for source in fixtures live; do
  for p in $PANELS; do
    s="$OUT/render-$source-$p"
    script "$s.script.json" "[{\"wait_idle\":true},{\"select_panel\":\"$p\"},{\"frames\":30},{\"quit\":true}]"
    if [ $source = fixtures ]; then args=("$FIXTURES"); else args=(--model linear --order jit,ddp --order ddp,jit); fi
    "$GUI" gui "${args[@]}" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
    rc=$?
    check "render $p ($source): exit 0" test $rc -eq 0
    check "render $p ($source): no error" json "$s.state.json" /error eq '""'
    check "render $p ($source): panel in front" json "$s.state.json" /panel eq "\"$p\""
    check "render $p ($source): frames drawn" json "$s.state.json" /frames ge 30
  done
done
check "fixtures: three imported pipelines" json "$OUT/render-fixtures-trace.state.json" /capture/pipelines/2/label eq '"mlp"'
check "fixtures: trace view shows the printed trace" json "$OUT/render-fixtures-trace.state.json" /trace/first_lines contains "def computation("

# 2. Screenshots: non-blank, and every pair of panels differs.
for p in $PANELS; do
  "$GUI" screenshot "$FIXTURES" --panel $p --out "$OUT/shot-$p.png" --size 1280x800 >"$OUT/shot-$p.log" 2>&1
  check "screenshot $p: exit 0" test $? -eq 0
  check "screenshot $p: not a single colour" "$CHECK" nonblank "$OUT/shot-$p.png"
done
for a in $PANELS; do
  for b in $PANELS; do
    [[ "$a" < "$b" ]] && check "screenshots $a and $b differ" "$CHECK" differ "$OUT/shot-$a.png" "$OUT/shot-$b.png"
  done
done

# 3. The scripted driver: jit,ddp -> ddp,jit, run, select a stage, step with the keyboard.
s="$OUT/order"
script "$s.script.json" '[
  {"wait_idle": true},
  {"select_panel": "order"},
  {"set_order": ["jit", "ddp"]},
  {"move_transform": {"from": 1, "to": 0}},
  {"frames": 2},
  {"run": true},
  {"wait_idle": true},
  {"frames": 3},
  {"select_stage": {"pipeline": 1, "kind": "prologue", "stage": 0}},
  {"select_panel": "trace"},
  {"key": "Down"},
  {"frames": 3},
  {"quit": true}]'
"$GUI" gui --model linear --order jit,ddp --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "order: exit 0" test $? -eq 0
check "order: edited order is ddp,jit" json "$s.state.json" /order eq '["ddp","jit"]'
check "order: two pipelines after the run" json "$s.state.json" /capture/pipelines/1/order eq '["ddp","jit"]'
check "order: previous order ran first" json "$s.state.json" /capture/pipelines/0/order eq '["jit","ddp"]'
check "order: verdict text present" json "$s.state.json" /capture/pipelines/1/verdict oneof \
  '["equivalent","different","failed","illegal","not compared"]'
check "order: exactly two pipelines" bash -c "! '$CHECK' json '$s.state.json' /capture/pipelines/2 nonempty"
check "order: Down key moved to the next stage" json "$s.state.json" /selected/pipeline eq 1
check "order: Down key moved within the pipeline" bash -c \
  "$CHECK json '$s.state.json' /selected/stage ge 1 || $CHECK json '$s.state.json' /selected/kind ne '\"prologue\"'"
check "order: selected stage's trace lines shown" json "$s.state.json" /trace/first_lines contains "def "
check "order: no error" json "$s.state.json" /error eq '""'

# 4. Keys and search on the fixtures: Down steps, Up steps back, Ctrl+F opens search, find counts matches.
s="$OUT/keys"
script "$s.script.json" '[
  {"wait_idle": true},
  {"select_stage": {"pipeline": 0, "kind": "prologue", "stage": 0}},
  {"key": "Down"}, {"frames": 1}, {"key": "Down"}, {"frames": 1}, {"key": "Up"}, {"frames": 1},
  {"key": "Ctrl+F"}, {"frames": 2},
  {"text": "weight"}, {"frames": 1}, {"key": "Enter"}, {"frames": 2},
  {"dump": "'"$s"'.typed.json"},
  {"find": "check"}, {"frames": 2},
  {"quit": true}]'
"$GUI" gui "$FIXTURES" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "keys: exit 0" test $? -eq 0
check "keys: Down, Down, Up lands on stage 1" json "$s.state.json" /selected/stage eq 1
check "keys: still in the prologue" json "$s.state.json" /selected/kind eq '"prologue"'
check "keys: Ctrl+F opened the search" json "$s.state.json" /trace/search/open eq true
check "keys: typed query found lines" json "$s.typed.json" /trace/search/matches ge 1
check "keys: Enter went to the first match" json "$s.typed.json" /trace/search/current eq 0
check "keys: find action found lines" json "$s.state.json" /trace/search/matches ge 1

# 5. A broken capture shows an error and the window survives.
s="$OUT/broken"
printf '{"format": "thunder-viz-capture", "version": 1, "pipelines": [ {"spec": ' >"$s.tvz.json"
script "$s.script.json" '[{"wait_idle": true}, {"frames": 10}, {"select_panel": "diff"}, {"frames": 5}, {"quit": true}]'
"$GUI" gui "$s.tvz.json" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "broken capture: exit 0" test $? -eq 0
check "broken capture: error shown" json "$s.state.json" /error contains "broken.tvz.json"
check "broken capture: frames kept coming" json "$s.state.json" /frames ge 15

# 6. Bad input exits 2 before a window; no display exits 2.
"$GUI" gui --model no_such_model --frames 1 >"$OUT/bad-model.log" 2>&1
check "unknown model: exit 2" test $? -eq 2
"$GUI" gui --model linear --order jit,warp --frames 1 >"$OUT/bad-order.log" 2>&1
check "unknown transform: exit 2" test $? -eq 2
env -u DISPLAY "$GUI" gui --model linear --frames 1 >"$OUT/no-display.log" 2>&1
check "no display: exit 2" test $? -eq 2
check "no display: says why" grep -q "DISPLAY" "$OUT/no-display.log"

echo "GUI tests: $PASSED passed, $FAILED failed (outputs in $OUT)"
[ $FAILED -eq 0 ]
