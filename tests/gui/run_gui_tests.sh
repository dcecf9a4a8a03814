#!/usr/bin/env bash
# GUI tests under a private Xvfb: every panel renders, screenshots are non-blank and differ,
# the scripted driver reorders transforms and runs, keys step through stages, a broken capture
# shows an error without killing the window, no display gives exit 2; with the scripted mouse
# (real ImGui input on named targets): the rules matrix of a `thunder-viz rules` capture is drawn
# cell by cell and a click diffs both orders, hovering a proxy after a replay shows its statistics,
# a click on a slowest bound symbol jumps the trace view to its line, drag and drop reorders.
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
. "$(dirname "$0")/private_xvfb.sh"
start_private_xvfb "$OUT/xvfb.log" || exit 1
for _ in $(seq 1 100); do
  "$GUI" gui --frames 1 --model linear >/dev/null 2>&1 && break
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
# A PNG is saved as captures are: a read-only file or a missing folder is refused (exit 2, why and
# how to fix) before anything renders, and the file is kept.
echo keep >"$OUT/readonly.png" && chmod 0444 "$OUT/readonly.png"
"$THUNDER_VIZ" screenshot "$FIXTURES" --panel replay --out "$OUT/readonly.png" >"$OUT/shot-readonly.log" 2>&1
check "screenshot onto a read-only file: exit 2" test $? -eq 2
check "screenshot onto a read-only file: says why and the fix" grep -q "read-only (mode 0444); make it writable" "$OUT/shot-readonly.log"
check "screenshot onto a read-only file: kept" grep -qx keep "$OUT/readonly.png"
"$THUNDER_VIZ" screenshot "$FIXTURES" --panel replay --out "$OUT/nodir/x.png" >"$OUT/shot-nodir.log" 2>&1
check "screenshot into a missing folder: exit 2" test $? -eq 2
check "screenshot into a missing folder: says why and the fix" grep -q "does not exist (No such file or directory); create it" "$OUT/shot-nodir.log"
chmod u+w "$OUT/readonly.png"
"$THUNDER_VIZ" screenshot "$FIXTURES" --panel replay --out "$OUT/huge.png" --size 100000x100000 >"$OUT/shot-huge.log" 2>&1
check "screenshot --size out of range: exit 2" test $? -eq 2
check "screenshot --size out of range: states the range" grep -q "expected WxH from 200x150 to 16384x16384" "$OUT/shot-huge.log"

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
check "order: outcome text present" json "$s.state.json" /capture/pipelines/1/verdict oneof \
  '["passed","failed","refused"]'
check "order: the comparison's verdict in the engine's words" json "$s.state.json" /capture/comparisons/0/line contains \
  "P1 [ddp,jit] vs P0 [jit,ddp]: equivalent"
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

get() { "$CHECK" get "$@"; }
same() { "$CHECK" same "$@"; }
no_script_errors() {  # no_script_errors STATE.json: every scripted action applied
  if grep -q '"error ' "$1"; then grep '"error ' "$1"; return 1; fi
}

# 7. The rules panel on a real matrix: `thunder-viz rules --out` makes a capture holding only the
# matrix; the GUI opens it on the rules panel, draws every cell with its verdict, and a real click
# on a cell runs both orders and shows them in the diff view, with the rule's explanation beside.
s="$OUT/rules"
"$THUNDER_VIZ" rules --model linear --world 2 --out "$s.tvz.json" >"$s.make.log" 2>&1
check "rules capture: made" test -s "$s.tvz.json"
check "rules capture: jit,ddp is cell 1" json "$s.tvz.json" /rules/cells/1/order eq '["jit","ddp"]'
check "rules capture: jit,ddp is equivalent" json "$s.tvz.json" /rules/cells/1/verdict eq '"equivalent"'
script "$s.script.json" '[
  {"wait_idle": true}, {"frames": 3},
  {"dump": "'"$s"'.open.json"},
  {"click": "rules/cell/jit,ddp"}, {"frames": 2}, {"wait_idle": true}, {"frames": 4},
  {"dump": "'"$s"'.clicked.json"},
  {"select_panel": "rules"}, {"frames": 3},
  {"dump": "'"$s"'.back.json"},
  {"click": "rules/cell/ddp,fsdp"}, {"frames": 2}, {"wait_idle": true}, {"frames": 4},
  {"dump": "'"$s"'.illegal.json"},
  {"select_panel": "rules"}, {"frames": 3},
  {"dump": "'"$s"'.illegal-rules.json"},
  {"click": "rules/cell/jit,ddp thunder-2024-03"}, {"frames": 2}, {"wait_idle": true}, {"frames": 4},
  {"quit": true}]'
"$GUI" gui "$s.tvz.json" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "rules: exit 0" test $? -eq 0
check "rules: opens on the rules panel" json "$s.open.json" /panel eq '"rules"'
check "rules: no error" json "$s.open.json" /error eq '""'
check "rules: transforms of the matrix" json "$s.open.json" /rules/transforms eq '["jit","ddp","fsdp","hsdp","autocast","remat"]'
check "rules: every cell drawn with its verdict and colour" "$CHECK" rules-drawn "$s.open.json" "$s.tvz.json"
check "rules: nothing selected yet" json "$s.open.json" /rules/selected/order eq '[]'
check "rules: click ran both orders" json "$s.clicked.json" /capture/pipelines/1/order eq '["ddp","jit"]'
check "rules: click opened the diff view" json "$s.clicked.json" /panel eq '"diff"'
check "rules: diff across pipelines" json "$s.clicked.json" /diff/across_pipelines eq true
check "rules: diff left is jit,ddp" json "$s.clicked.json" /diff/left/pipeline_label eq '"jit,ddp"'
check "rules: diff right is ddp,jit" json "$s.clicked.json" /diff/right/pipeline_label eq '"ddp,jit"'
check "rules: diff rows shown" json "$s.clicked.json" /diff/rows ge 1
check "rules: equivalent cell, same program in the diff" json "$s.clicked.json" /diff/same_program eq true
check "rules: the run kept the matrix" json "$s.clicked.json" /capture/rules eq true
check "rules: clicked cell selected" json "$s.clicked.json" /rules/selected/order eq '["jit","ddp"]'
check "rules: matrix drawn again after the run" "$CHECK" rules-drawn "$s.back.json" "$s.tvz.json"
check "rules: jit,ddp drawn selected" json "$s.back.json" /rules/drawn_cells/1/selected eq true
check "rules: jit,ddp still drawn as equivalent" json "$s.back.json" /rules/drawn_cells/1/label eq '"equivalent"'
check "rules: the cell's rule explained beside" same "$s.back.json" /rules/shown_explanation/rule "$s.tvz.json" /rules/cells/1/rule
rule=$(get "$s.tvz.json" /rules/cells/1/rule)
check "rules: the explanation is the matrix's text" same "$s.back.json" /rules/shown_explanation/text "$s.tvz.json" "/rules/explanations/$rule"
check "rules: illegal cell ran both orders" json "$s.illegal.json" /capture/pipelines/0/order eq '["ddp","fsdp"]'
check "rules: ddp,fsdp refused by the rule" json "$s.illegal.json" /capture/pipelines/0/rule eq '"one-parameter-distribution"'
check "rules: refused order shown as refused" json "$s.illegal.json" /capture/pipelines/0/verdict eq '"refused"'
check "rules: illegal cell's rule explained" json "$s.illegal-rules.json" /rules/shown_explanation/rule eq '"one-parameter-distribution"'
check "rules: thunder-2024-03 cell runs that mode" json "$s.state.json" /capture/pipelines/0/label eq '"jit,ddp thunder-2024-03"'
check "rules: thunder-2024-03 fails the seed's way" json "$s.state.json" /capture/pipelines/0/rule eq '"state-read-at-call"'
check "rules: seed error text" json "$s.state.json" /capture/pipelines/0/error contains "None had an unexpected type"
check "rules: against ddp,jit" json "$s.state.json" /capture/pipelines/1/order eq '["ddp","jit"]'
check "rules: no script error" no_script_errors "$s.state.json"
"$GUI" screenshot "$s.tvz.json" --panel rules --out "$s.png" --size 1280x800 >"$s.shot.log" 2>&1
check "rules screenshot: exit 0" test $? -eq 0
check "rules screenshot: not a single colour" "$CHECK" nonblank "$s.png"
check "rules screenshot: differs from the panel without a matrix" "$CHECK" differ "$s.png" "$OUT/shot-rules.png"

# 8. Hover after a replay: the mouse on proxy t0 of the final forward trace of a `thunder-viz run`
# capture: the tooltip shows its type and the replay's statistics, which for t0 (the model's
# output) are those of output[0] checked against eager, and the bound symbol that produced it.
s="$OUT/hover"
"$THUNDER_VIZ" run --model linear --out "$s.tvz.json" >"$s.make.log" 2>&1
check "hover capture: made" test -s "$s.tvz.json"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "forward", "stage": -1}},
  {"select_panel": "trace"}, {"frames": 3},
  {"dump": "'"$s"'.before.json"}, {"screenshot": "'"$s"'.before.png"}, {"frames": 1},
  {"mouse_move": "trace/proxy/t0"}, {"frames": 3},
  {"screenshot": "'"$s"'.png"}, {"frames": 1},
  {"quit": true}]'
"$GUI" gui "$s.tvz.json" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "hover: exit 0" test $? -eq 0
check "hover: no script error" no_script_errors "$s.state.json"
check "hover: nothing under the mouse before" json "$s.before.json" /trace/hover eq null
check "hover: tooltip for t0" json "$s.state.json" /trace/hover/name eq '"t0"'
check "hover: type as printed" json "$s.state.json" /trace/hover/type eq '"cpu f32[2, 10]"'
check "hover: requires_grad unknown in a loaded capture" json "$s.state.json" /trace/hover/requires_grad eq null
check "hover: the pipeline was replayed" json "$s.state.json" /trace/hover/replayed eq true
check "hover: on the replayed (final) stage" json "$s.state.json" /trace/hover/final_stage eq true
check "hover: statistics of rank 0" json "$s.state.json" /trace/hover/ranks/0/rank eq 0
check "hover: t0's statistics are output[0]'s" same "$s.state.json" /trace/hover/ranks/0/stats \
  "$s.tvz.json" /pipelines/0/replay/ranks/0/outputs/0/stats
check "hover: produced by ltorch.linear" json "$s.state.json" /trace/hover/ranks/0/produced_by/symbol eq '"ltorch.linear"'
check "hover: with its time" json "$s.state.json" /trace/hover/ranks/0/produced_by/microseconds ge 0
check "hover: the tooltip is drawn" "$CHECK" differ "$s.before.png" "$s.png"
# The same live, where requires_grad is known (a saved capture does not keep it).
s="$OUT/hover-live"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "forward", "stage": -1}},
  {"select_panel": "trace"}, {"frames": 3}, {"mouse_move": "trace/proxy/t0"}, {"frames": 3}, {"quit": true}]'
"$GUI" gui --model linear --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "hover live: exit 0" test $? -eq 0
check "hover live: tooltip for t0" json "$s.state.json" /trace/hover/name eq '"t0"'
check "hover live: requires_grad" json "$s.state.json" /trace/hover/requires_grad eq true
check "hover live: statistics of the replay" json "$s.state.json" /trace/hover/ranks/0/stats/shape eq '[2,10]'
# An imported printout has no replay: the tooltip says so instead of showing numbers.
s="$OUT/hover-imported"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "forward", "stage": 0}},
  {"select_panel": "trace"}, {"frames": 3}, {"mouse_move": "trace/proxy/input"}, {"frames": 3}, {"quit": true}]'
"$GUI" gui "$FIXTURES" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "hover imported: exit 0" test $? -eq 0
check "hover imported: tooltip for input" json "$s.state.json" /trace/hover/name eq '"input"'
check "hover imported: no replay statistics" json "$s.state.json" /trace/hover/replayed eq false
check "hover imported: no ranks" json "$s.state.json" /trace/hover/ranks eq '[]'

# 9. Jump to line: a click on the slowest bound symbol of the replay panel shows the final trace of
# its kind with that statement's line marked and scrolled into view.
s="$OUT/jump"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "forward", "stage": 0}},
  {"select_panel": "replay"}, {"frames": 3},
  {"dump": "'"$s"'.replay.json"},
  {"click": "replay/slowest/0"}, {"frames": 4},
  {"quit": true}]'
"$GUI" gui --model gpt --param layers=2 --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "jump: exit 0" test $? -eq 0
check "jump: no script error" no_script_errors "$s.state.json"
check "jump: slowest list shown" json "$s.replay.json" /replay/slowest/0/symbol nonempty
check "jump: forward timings listed" json "$s.replay.json" /replay/slowest/0/trace eq '"forward"'
check "jump: trace view in front" json "$s.state.json" /panel eq '"trace"'
check "jump: forward trace selected" json "$s.state.json" /selected/kind eq '"forward"'
forward_stages=$(get "$s.state.json" /capture/pipelines/0/stages/forward)
check "jump: its final stage" json "$s.state.json" /selected/stage eq $((forward_stages - 1))
symbol=$(get "$s.replay.json" /replay/slowest/0/symbol)
output=$(get "$s.replay.json" /replay/slowest/0/output)
check "jump: marked line calls $symbol" json "$s.state.json" /trace/marked_text contains "= $symbol("
check "jump: marked line defines $output" json "$s.state.json" /trace/marked_text contains "$output"
marked=$(get "$s.state.json" /trace/marked_line)
first=$(get "$s.state.json" /trace/first_visible_line)
last=$(get "$s.state.json" /trace/last_visible_line)
check "jump: marked line $marked in view [$first, $last]" test "$first" -le "$marked" -a "$marked" -le "$last"
if [ "$marked" -gt $((last - first)) ]; then
  check "jump: the view scrolled to it" test "$first" -gt 0
fi

# 10. Drag and drop in the order editor with the scripted mouse: press on an item, move, release on
# another; a click or a drop outside any item leaves the order alone.
s="$OUT/drag"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_panel": "order"}, {"frames": 3},
  {"dump": "'"$s"'.before.json"},
  {"drag": {"from": "order/item/1", "to": "order/item/0"}}, {"frames": 2},
  {"dump": "'"$s"'.one.json"},
  {"click": "order/item/1"}, {"frames": 2},
  {"drag": {"from": "order/item/0", "to": [5, 5]}}, {"frames": 2},
  {"dump": "'"$s"'.none.json"},
  {"set_order": ["jit", "ddp", "remat"]}, {"frames": 2},
  {"drag": {"from": "order/item/0", "to": "order/item/2"}}, {"frames": 2},
  {"quit": true}]'
"$GUI" gui --model linear --order jit,ddp --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "drag: exit 0" test $? -eq 0
check "drag: no script error" no_script_errors "$s.state.json"
check "drag: starts as jit,ddp" json "$s.before.json" /order eq '["jit","ddp"]'
check "drag: ddp dropped on jit gives ddp,jit" json "$s.one.json" /order eq '["ddp","jit"]'
check "drag: a click and a drop on nothing change nothing" json "$s.none.json" /order eq '["ddp","jit"]'
check "drag: first dropped on third gives ddp,remat,jit" json "$s.state.json" /order eq '["ddp","remat","jit"]'

# 11. A capture whose replay ran the step as a CUDA graph (`run --cuda-graph --device cuda`; the
# field is added here, this machine may have no GPU): the replay panel shows the graph's line.
s="$OUT/cuda-graph"
"$THUNDER_VIZ" run --model linear --out "$s.tvz.json" >"$s.make.log" 2>&1
/usr/bin/python3 - "$s.tvz.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["pipelines"][0]["replay"]["ranks"][0]["cuda_graph"] = {
    "ran": True, "steps": 20, "step_ms": 46.868, "graph_ms": 6.674, "max_abs_difference": 0, "error": ""}
json.dump(doc, open(sys.argv[1], "w"))
PY
script "$s.script.json" '[{"wait_idle": true}, {"select_panel": "replay"}, {"frames": 3}, {"quit": true}]'
"$GUI" gui "$s.tvz.json" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "cuda graph: exit 0" test $? -eq 0
check "cuda graph: the replay panel shows the graph's times" json "$s.state.json" /replay/cuda_graph contains \
  "as one graph 6.674 ms (0.142x)"

# 12. The seed in thunder-2024-03: the order panel offers the failed stage of jit,ddp; a click shows
# its partial backward with the failing all-reduce's line and its None argument marked.
s="$OUT/seed-failure"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_panel": "order"}, {"frames": 3},
  {"click": "order/failed-stage/P0"}, {"frames": 4},
  {"quit": true}]'
"$GUI" gui --model linear --order jit,ddp --order ddp,jit --world 2 --semantics thunder-2024-03 \
  --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "seed failure: exit 0" test $? -eq 0
check "seed failure: no script error" no_script_errors "$s.state.json"
check "seed failure: semantics in the order editor" json "$s.state.json" /semantics eq '"thunder-2024-03"'
check "seed failure: P0 failed" json "$s.state.json" /capture/pipelines/0/verdict eq '"failed"'
check "seed failure: P1 passed" json "$s.state.json" /capture/pipelines/1/verdict eq '"passed"'
check "seed failure: the trace view shows the failed stage" json "$s.state.json" /panel eq '"trace"'
check "seed failure: the failing line is the all-reduce" json "$s.state.json" /trace/failed_text contains "torch_all_reduce_prim_impl"
check "seed failure: its group argument is None" json "$s.state.json" /trace/failed_text contains "_DistributedReduceOps_SUM_0, None, True"

# 13. Stage diffs follow the stage browser: selecting ddp's bucketing stage diffs it against the
# stage before it; unchanged runs fold to context; next change moves to a row that differs. The
# selected stage carries its memory (peak live bytes from its statements).
s="$OUT/stage-diff"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "backward", "stage": 2}},
  {"select_panel": "diff"}, {"frames": 3}, {"dump": "'"$s"'.selected.json"},
  {"next_change": 1}, {"frames": 3}, {"dump": "'"$s"'.next.json"},
  {"diff": {"fold": false}}, {"frames": 3}, {"quit": true}]'
"$GUI" gui --model gpt --param layers=2 --order jit,ddp --world 2 --script "$s.script.json" \
  --dump-state "$s.state.json" >"$s.log" 2>&1
check "stage diff: exit 0" test $? -eq 0
check "stage diff: no script error" no_script_errors "$s.state.json"
check "stage diff: right is the selected stage" json "$s.selected.json" /diff/right/pass eq '"ddp bucketing (25 MB)"'
check "stage diff: left is the stage before it" json "$s.selected.json" /diff/left/pass eq '"ddp pass"'
check "stage diff: folding is on by default" json "$s.selected.json" /diff/fold_unchanged eq true
check "stage diff: next change is a change" json "$s.next.json" /diff/focus_kind oneof '["changed","added","removed"]'
check "stage diff: unfolded shows every row" json "$s.state.json" /diff/fold_unchanged eq false
check "memory: the selected stage's peak live bytes" json "$s.selected.json" /selected/peak_live_bytes ge 100000
check "memory: the backward saves nothing for a later pass" json "$s.selected.json" /selected/saved_for_backward_bytes eq 0
/usr/bin/python3 - "$s.selected.json" "$s.state.json" <<'PY' && pass "stage diff: folding hides rows, unfolding shows them all" || fail "stage diff: folding hides rows, unfolding shows them all"
import json, sys
folded, unfolded = (json.load(open(p))["diff"] for p in sys.argv[1:3])
assert folded["displayed_rows"] < folded["rows"], folded
assert unfolded["displayed_rows"] == unfolded["rows"], unfolded
PY

# 14. Forward <-> backward: a click on a backward statement (the mlp's first matmul, from its
# second linear) shows the forward statement its gradient rule belongs to; "show backward" marks every
# statement that rule made; a click on a forward statement follows it and boxes the saved values.
s="$OUT/gradient"
script "$s.find.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "backward", "stage": 0}}, {"frames": 3},
  {"dump": "'"$s"'.find.json"}, {"quit": true}]'
"$GUI" gui --model mlp --script "$s.find.script.json" --dump-state "$s.find.state.json" >"$s.find.log" 2>&1
# The first top-level matmul of the backward: its output names its call's target.
matmul=$(/usr/bin/python3 - "$s.find.json" <<'PY'
import json, re, sys
lines = json.load(open(sys.argv[1]))["trace"]["first_lines"]
print(next(m.group(1) for m in (re.match(r"  (t\d+) = ltorch\.matmul\(", l) for l in lines) if m))
PY
)
check "gradient: the backward has a matmul" test -n "$matmul"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "backward", "stage": 0}}, {"frames": 3},
  {"click": "trace/call/'"$matmul"'"}, {"frames": 3}, {"dump": "'"$s"'.to-forward.json"},
  {"click": "trace/gradient/backward"}, {"frames": 3}, {"dump": "'"$s"'.to-backward.json"},
  {"select_stage": {"pipeline": 0, "kind": "forward", "stage": -1}}, {"frames": 2}, {"click": "trace/call/t0"},
  {"frames": 3}, {"dump": "'"$s"'.forward-click.json"}, {"depth": 0}, {"frames": 2}, {"click": "trace/call/t1"},
  {"frames": 3}, {"dump": "'"$s"'.fusion-click.json"},
  {"quit": true}]'
"$GUI" gui --model mlp --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "gradient: exit 0" test $? -eq 0
check "gradient: no script error" no_script_errors "$s.state.json"
check "gradient: a backward click shows the forward" json "$s.to-forward.json" /selected/kind eq '"forward"'
check "gradient: ... the linear whose rule made it" json "$s.to-forward.json" /gradient/forward_statement contains "ltorch.linear"
check "gradient: ... marked in the forward" json "$s.to-forward.json" /trace/gradient_lines/0/text contains "ltorch.linear"
check "gradient: ... scrolled to" same "$s.to-forward.json" /trace/marked_line "$s.to-forward.json" /trace/gradient_lines/0/line
check "gradient: its saved values" json "$s.to-forward.json" /gradient/saved contains "t_fc2_weight"
check "gradient: show backward selects a backward stage" json "$s.to-backward.json" /selected/kind eq '"backward"'
check "gradient: ... marks what the rule made" json "$s.to-backward.json" /trace/gradient_lines/1/line ge 1
check "gradient: ... the clicked matmul among them" json "$s.to-backward.json" /trace/gradient_lines contains "$matmul"
check "gradient: ... boxes the saved values read" json "$s.to-backward.json" /trace/saved_marked contains "t_fc2_weight"
check "gradient: a forward click follows that statement" json "$s.forward-click.json" /gradient/key eq '"t0"'
check "gradient: ... the first linear's backward statements" json "$s.forward-click.json" /gradient/backward_statements ge 2
check "gradient: ... it stays in the forward" json "$s.forward-click.json" /selected/kind eq '"forward"'
check "gradient: a fusion region's click follows all its members" json "$s.fusion-click.json" /gradient/fused ge 2
check "gradient: ... their forward statements" json "$s.fusion-click.json" /gradient/keys contains "t1"
check "gradient: ... what their rules made" json "$s.fusion-click.json" /gradient/backward_statements ge 4
check "gradient: ... the region's line marked" json "$s.fusion-click.json" /trace/gradient_lines/0/text contains "fusion0"
# Thunder's printouts carry no links: a click on a backward statement says so.
script "$s.imported.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "backward", "stage": 0}}, {"frames": 3},
  {"click": "trace/call/*"}, {"frames": 3}, {"quit": true}]'
"$GUI" gui "$FIXTURES" --script "$s.imported.script.json" --dump-state "$s.imported.json" >"$s.imported.log" 2>&1
check "gradient: imported, exit 0" test $? -eq 0
check "gradient: imported, no script error" no_script_errors "$s.imported.json"
check "gradient: imported printouts carry no links, said so" json "$s.imported.json" /gradient/note contains "no forward-backward links"

# 16. Source provenance: a click on a statement opens the source pane on the line it came from (the
# zoo's model definition, found under the source tree); every statement from that line is marked, at
# every stage, backward included; a click on another line of the pane follows that line; the pane's
# next-stage button steps to the next stage holding one. Imported printouts: the user's file is found
# beside them by name, and a line's statements are marked.
s="$OUT/source"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "forward", "stage": -1}}, {"frames": 3},
  {"click": "trace/call/t0"}, {"frames": 3}, {"dump": "'"$s"'.clicked.json"}, {"quit": true}]'
"$GUI" gui --model mlp --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "source: exit 0" test $? -eq 0
check "source: no script error" no_script_errors "$s.state.json"
check "source: the clicked linear's file" json "$s.clicked.json" /source_focus/file eq '"engine/jit/zoo.cpp"'
check "source: ... read from the source tree" json "$s.clicked.json" /source_focus/read_from contains "engine/jit/zoo.cpp"
check "source: ... its line reads as recorded" json "$s.clicked.json" /source_focus/code_matches eq true
check "source: ... the recorded code" json "$s.clicked.json" /source_focus/code contains "lt::linear"
check "source: the linear's line marked" json "$s.clicked.json" /trace/source_lines/0/text contains "ltorch.linear"
check "source: the pane dots the model's three lines" json "$s.clicked.json" /source_focus/file_lines_with_statements/2 ge 1
check "source: statements from it in every backward stage" /usr/bin/python3 -c '
import json, sys
stages = json.load(open(sys.argv[1]))["source_focus"]["stages"]
backward = [s for s in stages if s["kind"] == "backward"]
assert backward and all(s["statements"] >= 1 for s in backward), backward
assert all(s["statements"] >= 1 for s in stages if s["kind"] == "forward"), stages
' "$s.clicked.json"
fc1=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["source_focus"]["line"])' "$s.clicked.json" 2>/dev/null)
check "source: fc1's line known" test -n "$fc1"
gelu=$((fc1 + 1))
script "$s.pane.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "forward", "stage": -1}}, {"frames": 3},
  {"click": "trace/call/t0"}, {"frames": 3}, {"click": "source/line/'"$gelu"'"}, {"frames": 3},
  {"dump": "'"$s"'.pane.json"}, {"click": "source/next-stage"}, {"frames": 3}, {"dump": "'"$s"'.next.json"},
  {"quit": true}]'
"$GUI" gui --model mlp --script "$s.pane.script.json" --dump-state "$s.pane.state.json" >"$s.pane.log" 2>&1
check "source: pane, exit 0" test $? -eq 0
check "source: pane, no script error" no_script_errors "$s.pane.state.json"
check "source: a pane click follows that line" json "$s.pane.json" /source_focus/line eq "$gelu"
check "source: ... gelu's pieces marked" json "$s.pane.json" /trace/source_lines contains "ltorch.erf"
check "source: ... scrolled to" same "$s.pane.json" /trace/marked_line "$s.pane.json" /trace/source_lines/0/line
check "source: next stage with it is the backward" json "$s.next.json" /selected/kind eq '"backward"'
check "source: ... gelu's gradient marked there" json "$s.next.json" /trace/source_lines/0/line ge 1
script "$s.imported.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "forward", "stage": 0}}, {"frames": 3},
  {"follow_source": {"file": "/home/user/models/blocks.py", "line": 90}}, {"frames": 3}, {"dump": "'"$s"'.imported-all.json"},
  {"depth": 0}, {"frames": 3}, {"quit": true}]'
"$GUI" gui "$FIXTURES/../thunder_cpu" --script "$s.imported.script.json" --dump-state "$s.imported.json" \
  >"$s.imported.log" 2>&1
check "source: imported, exit 0" test $? -eq 0
check "source: imported, no script error" no_script_errors "$s.imported.json"
check "source: imported, the convnet" json "$s.imported.json" /capture/pipelines/0/label eq '"convnet"'
check "source: the user's file found beside the printouts" json "$s.imported.json" /source_focus/read_from contains "thunder_cpu/blocks.py"
check "source: ... its line reads as recorded" json "$s.imported.json" /source_focus/code_matches eq true
check "source: ... their decompositions too, at every depth" json "$s.imported-all.json" /trace/source_lines/4/text contains "prims.where"
check "source: relu and max_pool2d came from line 90" /usr/bin/python3 -c '
import json, sys
lines = [l["text"] for l in json.load(open(sys.argv[1]))["trace"]["source_lines"]]
assert len(lines) == 2 and "ltorch.relu" in lines[0] and "ltorch.max_pool2d" in lines[1], lines
' "$s.imported.json"

# 18. The rename map beside "same program": Thunder's linear forward against the ddp one (t3 became t5).
s="$OUT/renames"
script "$s.script.json" '[
  {"wait_idle": true}, {"diff": {"across": true, "follow": false, "left": {"pipeline": 1, "kind": "forward", "stage": 0},
   "right": {"pipeline": 0, "kind": "forward", "stage": 0}}}, {"frames": 3}, {"quit": true}]'
"$GUI" gui "$FIXTURES" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "renames: exit 0" test $? -eq 0
check "renames: no script error" no_script_errors "$s.state.json"
check "renames: linear against ddp_jit_then_ddp" json "$s.state.json" /diff/left/pipeline_label eq '"linear"'
check "renames: same program" json "$s.state.json" /diff/same_program eq true
check "renames: one name differs" json "$s.state.json" /diff/renames/count eq 1
check "renames: t3 became t5" json "$s.state.json" /diff/renames/first/0 eq '["t3","t5"]'

# 17. The user's own model re-runs: a capture saved from Python (a module the engine does not have)
# opens, and the Order panel rebuilds the model from the capture's acquired traces and runs two new
# orders on it; imported Thunder printouts cannot be re-run, and Run says why. Saved with its inputs
# (Inspector.save(path, inputs=...): weights, buffers, inputs and eager torch's numbers beside the
# capture), the re-run replays both orders on those weights and checks them against eager's numbers.
s="$OUT/rerun"
PYDIR="$(cd "$(dirname "$THUNDER_VIZ")/../python" 2>/dev/null && pwd)"
if [ -z "$PYDIR" ] || ! PYTHONPATH="$PYDIR" /usr/bin/python3 -c 'import thunder_viz' >/dev/null 2>&1; then
  echo "SKIP: the thunder_viz Python package is not built (python3-torch, pybind11-dev); the re-run of a Python capture needs one"
else
  cat >"$s.model.py" <<'PY'
import sys, torch, thunder_viz as tv
class MyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)
        self.bn = torch.nn.BatchNorm1d(16)
    def forward(self, x):
        h = torch.nn.functional.gelu(self.bn(self.fc1(x)))
        return self.fc2(h).softmax(-1)
torch.manual_seed(0)
tm = tv.jit(MyNet())
inspector = tv.attach(tm)
x = torch.randn(4, 8)
tm(x).sum().backward()
inspector.save(sys.argv[1])
inspector.save(sys.argv[2], inputs=(x,))
PY
  PYTHONPATH="$PYDIR" /usr/bin/python3 "$s.model.py" "$s.tvz.json" "$s.weights.tvz.json" >"$s.python.log" 2>&1
  check "rerun: a capture saved from Python" test -s "$s.tvz.json"
  script "$s.script.json" '[
    {"wait_idle": true}, {"frames": 2}, {"dump": "'"$s"'.opened.json"}, {"select_panel": "order"},
    {"set_order": ["jit", "ddp"]}, {"world": 2}, {"run": true}, {"wait_idle": true}, {"frames": 2},
    {"set_order": ["ddp", "jit"]}, {"run": true}, {"wait_idle": true}, {"frames": 3}, {"quit": true}]'
  "$GUI" gui "$s.tvz.json" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
  check "rerun: exit 0" test $? -eq 0
  check "rerun: no script error" no_script_errors "$s.state.json"
  check "rerun: the Python model's name" json "$s.opened.json" /capture/model eq '"MyNet"'
  check "rerun: Run is possible" json "$s.opened.json" /rerun/possible eq true
  check "rerun: ... on the model rebuilt from the capture" json "$s.opened.json" /rerun/rebuilt eq true
  check "rerun: ... and says what that gives" json "$s.opened.json" /rerun/note contains "random weights"
  check "rerun: jit,ddp ran on it" json "$s.state.json" /capture/pipelines/0/label eq '"jit,ddp"'
  check "rerun: ... passed" json "$s.state.json" /capture/pipelines/0/verdict eq '"passed"'
  check "rerun: ddp,jit ran on it" json "$s.state.json" /capture/pipelines/1/label eq '"ddp,jit"'
  check "rerun: ... passed" json "$s.state.json" /capture/pipelines/1/verdict eq '"passed"'
  check "rerun: the two orders compared" json "$s.state.json" /capture/comparisons/0/line contains "equivalent"
  check "rerun: ... without claiming numbers" json "$s.state.json" /capture/comparisons/0/line contains "numbers not compared"
  check "rerun: no error" json "$s.state.json" /error eq '""'
  check "rerun: weights, inputs and eager numbers saved beside" test -s "$s.weights.tvz.json.tensors.pt"
  sed "s|$s.opened.json|$s.weights.opened.json|" "$s.script.json" >"$s.weights.script.json"
  "$GUI" gui "$s.weights.tvz.json" --script "$s.weights.script.json" --dump-state "$s.weights.state.json" >"$s.weights.log" 2>&1
  check "rerun: with weights, exit 0" test $? -eq 0
  check "rerun: with weights, no script error" no_script_errors "$s.weights.state.json"
  check "rerun: ... says the numbers are checked" json "$s.weights.opened.json" /rerun/note contains "checks every order's outputs and gradients"
  check "rerun: ... jit,ddp replayed" json "$s.weights.state.json" /capture/pipelines/0/replayed eq true
  check "rerun: ... passed against eager's numbers" json "$s.weights.state.json" /capture/pipelines/0/verdict eq '"passed"'
  check "rerun: ... ddp,jit passed" json "$s.weights.state.json" /capture/pipelines/1/verdict eq '"passed"'
  check "rerun: ... equal numbers claimed only now" json "$s.weights.state.json" /capture/comparisons/0/line contains "equal numbers on every rank"
  check "rerun: ... eager beside the output and the 6 gradients" json "$s.weights.state.json" /replay/ranks_table/rows_with_eager eq 7
fi
script "$s.imported.script.json" '[{"wait_idle": true}, {"select_panel": "order"}, {"run": true}, {"frames": 3}, {"quit": true}]'
"$GUI" gui "$FIXTURES" --script "$s.imported.script.json" --dump-state "$s.imported.json" >"$s.imported.log" 2>&1
check "rerun: imported, exit 0" test $? -eq 0
check "rerun: imported printouts cannot be re-run" json "$s.imported.json" /rerun/possible eq false
check "rerun: ... and Run says why" json "$s.imported.json" /error contains "imported from Thunder describe no module"

# 19. Ranks side by side: the mlp under jit,ddp over 2 ranks (gloo) shows every value of the final
# forward and backward in one table, eager's beside the outputs and gradients, and the reduced
# gradients shared and equal. In a copy of the capture where rank 1's statistics of one reduced
# gradient were changed, the table says where the ranks part, and its button shows that statement.
s="$OUT/ranks"
"$THUNDER_VIZ" run --model mlp --order jit,ddp --world 2 --out "$s.tvz.json" >"$s.run.log" 2>&1
check "ranks: a 2-rank ddp capture" test -s "$s.tvz.json"
script "$s.script.json" '[{"wait_idle": true}, {"select_panel": "replay"}, {"frames": 2},
  {"click": "replay/side-by-side"}, {"frames": 3}, {"quit": true}]'
"$GUI" gui "$s.tvz.json" --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "ranks: exit 0" test $? -eq 0
check "ranks: no script error" no_script_errors "$s.state.json"
check "ranks: shown side by side" json "$s.state.json" /replay/side_by_side eq true
check "ranks: both ranks in one table" json "$s.state.json" /replay/ranks_table/ranks eq 2
check "ranks: values every rank must share" json "$s.state.json" /replay/ranks_table/invariant_rows ge 4
check "ranks: eager beside the output and the 4 gradients" json "$s.state.json" /replay/ranks_table/rows_with_eager eq 5
check "ranks: they agree" json "$s.state.json" /replay/ranks_table/ranks_line contains "agree"
check "ranks: ... so nothing is marked" json "$s.state.json" /replay/ranks_table/first_ranks_part eq null
/usr/bin/python3 - "$s.tvz.json" "$s.parted.tvz.json" >"$s.edit.log" 2>&1 <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rank1 = c["pipelines"][0]["replay"]["ranks"][1]
value = rank1["gradients"][-1]["proxy"]  # a reduced gradient, "backward:tN"
rank1["proxies"][value]["mean"] += 1.0
json.dump(c, open(sys.argv[2], "w"))
print(value.split(":")[1])
PY
parted=$(tail -1 "$s.edit.log")
check "ranks: a gradient of rank 1 changed" test -n "$parted"
script "$s.parted.script.json" '[{"wait_idle": true}, {"select_panel": "replay"}, {"frames": 2},
  {"click": "replay/side-by-side"}, {"frames": 3}, {"dump": "'"$s"'.parted.json"},
  {"click": "replay/ranks/first-part"}, {"frames": 3}, {"quit": true}]'
"$GUI" gui "$s.parted.tvz.json" --script "$s.parted.script.json" --dump-state "$s.parted.state.json" >"$s.parted.log" 2>&1
check "ranks: parted, exit 0" test $? -eq 0
check "ranks: parted, no script error" no_script_errors "$s.parted.state.json"
check "ranks: where rank 1 parts" json "$s.parted.json" /replay/ranks_table/first_ranks_part/proxy eq "\"$parted\""
check "ranks: ... rank 1" json "$s.parted.json" /replay/ranks_table/first_ranks_part/spread_rank eq 1
check "ranks: ... said" json "$s.parted.json" /replay/ranks_table/ranks_line contains "rank 1 parts from rank 0 at backward statement"
check "ranks: the button shows the trace" json "$s.parted.state.json" /panel eq '"trace"'
check "ranks: ... the final backward" json "$s.parted.state.json" /selected/kind eq '"backward"'
check "ranks: ... at the statement that defines it" /usr/bin/python3 -c '
import json, re, sys
text = json.load(open(sys.argv[1]))["trace"]["marked_text"]
assert re.match(r"\s*\(?[\w, ]*\b" + sys.argv[2] + r"\b[\w, ]*\)? = ", text), text
' "$s.parted.state.json" "$parted"

# 20. Every pipeline side by side: jit, jit,ddp and jit,remat of the mlp over 2 ranks, their final
# backward traces in three columns aligned with jit's; ddp's all-reduces are rows of their own; a
# click on a cell of the ddp column shows that statement in its trace.
s="$OUT/pipelines"
script "$s.script.json" '[{"wait_idle": true}, {"select_panel": "diff"}, {"frames": 2}, {"click": "diff/every-pipeline"},
  {"frames": 2}, {"diff": {"kind": "backward", "base": 0, "pass": "", "fold": false}}, {"frames": 3},
  {"dump": "'"$s"'.shown.json"}, {"diff": {"fold": true}}, {"frames": 3}, {"dump": "'"$s"'.folded.json"},
  {"click": "diff/pipelines/1/*"}, {"frames": 3}, {"quit": true}]'
"$GUI" gui --model mlp --order jit --order jit,ddp --order jit,remat --world 2 --script "$s.script.json" \
  --dump-state "$s.state.json" >"$s.log" 2>&1
check "pipelines: exit 0" test $? -eq 0
check "pipelines: no script error" no_script_errors "$s.state.json"
check "pipelines: every pipeline mode" json "$s.shown.json" /diff/every_pipeline/kind eq '"backward"'
check "pipelines: three columns" json "$s.shown.json" /diff/every_pipeline/columns/2/pipeline eq 2
check "pipelines: ... base jit first" json "$s.shown.json" /diff/every_pipeline/columns/0/label eq '"jit"'
check "pipelines: ... the base is the base" json "$s.shown.json" /diff/every_pipeline/columns/0/same_program eq true
check "pipelines: ddp adds its all-reduces and waits" json "$s.shown.json" /diff/every_pipeline/columns/1/count/added ge 2
check "pipelines: every row shown unfolded" same "$s.shown.json" /diff/every_pipeline/rows "$s.shown.json" /diff/every_pipeline/displayed_rows
check "pipelines: folding keeps fewer rows" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["diff"]["every_pipeline"]
assert 0 < d["displayed_rows"] < d["rows"], d
' "$s.folded.json"
check "pipelines: a click shows that pipeline's trace" json "$s.state.json" /selected/pipeline eq 1
check "pipelines: ... its final backward" json "$s.state.json" /selected/kind eq '"backward"'
check "pipelines: ... in the trace view" json "$s.state.json" /panel eq '"trace"'

# 21. A still window is not drawn again: 30 frames with nothing changing draw at most one; moving
# the mouse onto a proxy (its tooltip) draws again; a screenshot after still frames shows the trace.
s="$OUT/still"
script "$s.script.json" '[
  {"wait_idle": true}, {"select_stage": {"pipeline": 0, "kind": "forward", "stage": -1}},
  {"select_panel": "trace"}, {"frames": 10}, {"dump": "'"$s"'.a.json"}, {"frames": 30}, {"dump": "'"$s"'.b.json"},
  {"mouse_move": "trace/proxy/t0"}, {"frames": 3}, {"dump": "'"$s"'.c.json"}, {"frames": 30},
  {"screenshot": "'"$s"'.png"}, {"frames": 1}, {"quit": true}]'
"$GUI" gui --model linear --script "$s.script.json" --dump-state "$s.state.json" >"$s.log" 2>&1
check "still: exit 0" test $? -eq 0
check "still: no script error" no_script_errors "$s.state.json"
drawn_a=$(get "$s.a.json" /drawn_frames) drawn_b=$(get "$s.b.json" /drawn_frames) drawn_c=$(get "$s.c.json" /drawn_frames)
check "still: 30 still frames drew $((drawn_b - drawn_a))" test $((drawn_b - drawn_a)) -le 1
check "still: a tooltip drew again ($((drawn_c - drawn_b)))" test $((drawn_c - drawn_b)) -ge 1
check "still: every frame counted" json "$s.b.json" /frames ge 40
check "still: the screenshot shows the trace" "$CHECK" nonblank "$s.png"

# 15. Real input: the rules click, stage-diff navigation, the forward <-> backward click and the source pane driven by
# X events (xdotool moves the pointer and clicks, and presses keys, in the Xvfb window).
if ! command -v xdotool >/dev/null 2>&1; then
  echo "SKIP: xdotool is not installed (apt-get install xdotool); the real-input GUI tests need it"
else
  # real_input_run NAME SCRIPT_JSON GUI_ARGS...: starts the GUI on SCRIPT in the background.
  real_input_run() {
    local name=$1 body=$2; shift 2
    script "$OUT/$name.script.json" "$body"
    "$GUI" gui "$@" --script "$OUT/$name.script.json" --dump-state "$OUT/$name.state.json" >"$OUT/$name.log" 2>&1 &
    REAL_PID=$!
  }
  wait_file() {  # wait_file PATH: up to 60 s
    for _ in $(seq 1 600); do [ -e "$1" ] && return 0; sleep 0.1; done
    echo "$1 did not appear" >>"$OUT/checks.log"; return 1
  }
  # x_click TARGETS NAME: the pointer onto the target's centre (window pixels), then a press and release.
  x_click() {
    local xy window
    xy=$(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[sys.argv[2]]; print(int((r[0]+r[2])/2), int((r[1]+r[3])/2))' "$1" "$2") || return 1
    window=$(xdotool search --name "Thunder Viz" | head -1)
    [ -n "$window" ] || return 1
    # Each step held over several frames (llvmpipe frames of a large trace take tens of milliseconds):
    # ImGui hit-tests the hover in one frame and takes the press and the release in later ones.
    xdotool mousemove --window "$window" $xy && sleep 0.6 && xdotool mousedown 1 && sleep 0.3 && xdotool mouseup 1 && sleep 0.6
  }
  real_done() { wait $REAL_PID; }

  s="$OUT/real-rules"
  real_input_run real-rules '[{"real_input": true}, {"wait_idle": true}, {"select_panel": "rules"}, {"frames": 5},
    {"targets": "'"$s"'.targets.json"}, {"wait_for_file": "'"$s"'.go"}, {"frames": 2}, {"wait_idle": true},
    {"frames": 4}, {"dump": "'"$s"'.clicked.json"}, {"quit": true}]' "$OUT/rules.tvz.json"
  wait_file "$s.targets.json" && x_click "$s.targets.json" "rules/cell/jit,ddp" >>"$OUT/checks.log" 2>&1
  touch "$s.go"; real_done
  check "real input: rules click, exit 0" test $? -eq 0
  check "real input: rules click ran both orders" json "$s.clicked.json" /capture/pipelines/1/order eq '["ddp","jit"]'
  check "real input: rules click opened the diff" json "$s.clicked.json" /panel eq '"diff"'
  check "real input: rules diff across pipelines" json "$s.clicked.json" /diff/across_pipelines eq true

  s="$OUT/real-stage-diff"
  real_input_run real-stage-diff '[{"real_input": true}, {"wait_idle": true}, {"select_panel": "diff"}, {"frames": 5},
    {"targets": "'"$s"'.targets.json"}, {"wait_for_file": "'"$s"'.go1"}, {"frames": 3}, {"dump": "'"$s"'.selected.json"},
    {"targets": "'"$s"'.targets2.json"}, {"wait_for_file": "'"$s"'.go2"}, {"frames": 3}, {"dump": "'"$s"'.next.json"},
    {"wait_for_file": "'"$s"'.go3"}, {"frames": 3}, {"dump": "'"$s"'.down.json"}, {"quit": true}]' \
    --model gpt --param layers=2 --order jit,ddp --world 2
  wait_file "$s.targets.json" && x_click "$s.targets.json" "stages/0/backward/2" >>"$OUT/checks.log" 2>&1
  touch "$s.go1"
  wait_file "$s.targets2.json" && x_click "$s.targets2.json" "diff/next-change" >>"$OUT/checks.log" 2>&1
  touch "$s.go2"
  wait_file "$s.next.json"
  # Held over a few frames: ImGui 1.86 reads keys as down or up per frame, so a press and release
  # within one frame would be lost.
  { xdotool windowfocus --sync "$(xdotool search --name "Thunder Viz" | head -1)" && xdotool keydown Down &&
    sleep 0.2 && xdotool keyup Down && sleep 0.3; } >>"$OUT/checks.log" 2>&1
  touch "$s.go3"; real_done
  check "real input: stage diff, exit 0" test $? -eq 0
  check "real input: clicked stage diffed" json "$s.selected.json" /diff/right/pass eq '"ddp bucketing (25 MB)"'
  check "real input: against the stage before it" json "$s.selected.json" /diff/left/pass eq '"ddp pass"'
  check "real input: next change button" json "$s.next.json" /diff/focus_kind oneof '["changed","added","removed"]'
  # A loaded machine draws slow frames: a key held 0.2 s may outlast ImGui's repeat delay and step twice.
  check "real input: Down steps to a later stage" json "$s.down.json" /diff/right/stage ge 3
  check "real input: ... and the diff follows it" same "$s.down.json" /diff/right/stage "$s.down.json" /selected/stage

  s="$OUT/real-gradient"
  real_input_run real-gradient '[{"real_input": true}, {"wait_idle": true},
    {"select_stage": {"pipeline": 0, "kind": "backward", "stage": 0}}, {"frames": 5},
    {"targets": "'"$s"'.targets.json"}, {"wait_for_file": "'"$s"'.go"}, {"frames": 3}, {"dump": "'"$s"'.clicked.json"},
    {"quit": true}]' --model mlp
  wait_file "$s.targets.json" && x_click "$s.targets.json" "trace/call/$matmul" >>"$OUT/checks.log" 2>&1
  touch "$s.go"; real_done
  check "real input: gradient click, exit 0" test $? -eq 0
  check "real input: a backward click shows the forward" json "$s.clicked.json" /selected/kind eq '"forward"'
  check "real input: ... its linear marked" json "$s.clicked.json" /trace/gradient_lines/0/text contains "ltorch.linear"

  s="$OUT/real-source"
  real_input_run real-source '[{"real_input": true}, {"wait_idle": true},
    {"select_stage": {"pipeline": 0, "kind": "forward", "stage": -1}}, {"frames": 5},
    {"targets": "'"$s"'.targets.json"}, {"wait_for_file": "'"$s"'.go1"}, {"frames": 3},
    {"targets": "'"$s"'.targets2.json"}, {"wait_for_file": "'"$s"'.go2"}, {"frames": 3}, {"dump": "'"$s"'.clicked.json"},
    {"quit": true}]' --model mlp
  wait_file "$s.targets.json" && x_click "$s.targets.json" "trace/call/t0" >>"$OUT/checks.log" 2>&1
  touch "$s.go1"
  wait_file "$s.targets2.json" && x_click "$s.targets2.json" "source/line/$gelu" >>"$OUT/checks.log" 2>&1
  touch "$s.go2"; real_done
  check "real input: source click, exit 0" test $? -eq 0
  check "real input: a pane line clicked is followed" json "$s.clicked.json" /source_focus/line eq "$gelu"
  check "real input: ... its statements marked" json "$s.clicked.json" /trace/source_lines contains "ltorch.erf"
fi

echo "GUI tests: $PASSED passed, $FAILED failed (outputs in $OUT)"
[ $FAILED -eq 0 ]
