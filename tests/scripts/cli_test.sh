#!/usr/bin/env bash
# The command line as a user runs it: exit codes 0/1/2, clear errors, the seed story end to end.
# Usage: cli_test.sh THUNDER_VIZ SOURCE_DIR
set -uo pipefail
tool=$1 src=$2
fixtures=$src/tests/fixtures/thunder
failures=0
passes=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE PATTERN -- ARGS...: runs the tool, checks the exit code and that PATTERN appears in its output.
expect() {
  local code=$1 pattern=$2
  shift 3
  "$tool" "$@" > "$tmp/out" 2>&1
  local got=$?
  if [[ $got -ne $code ]] || ! grep -qE -- "$pattern" "$tmp/out"; then
    echo "FAIL: thunder-viz $* -> exit $got (want $code), pattern '$pattern'"
    sed 's/^/    /' "$tmp/out" | head -20
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}

expect 0 "Subcommands" -- --help
expect 2 "Subcommands" --
expect 2 "--depth: Value -1 not in range 0 to" -- import "$fixtures/mlp__fwd__00.txt" --depth -1
expect 0 "gpt" -- models
expect 0 "def computation\(input, t_weight\)" -- show --model linear --trace computation
expect 2 "unknown model 'nope'.*linear" -- show --model nope
expect 2 "layers" -- show --model gpt --param nope=1
expect 0 "round trip OK" -- import "$fixtures/mlp__bwd__00.txt" --check
expect 0 "round trip OK" -- import "$fixtures/mlp__bwd__00.python.txt" --depth 0 --check
printf 'def f(x):\n  t0 = ltorch.neg(x\n' > "$tmp/bad.txt"
expect 2 "bad.txt:2:[0-9]+: " -- import "$tmp/bad.txt"
expect 2 "cannot open" -- import "$tmp/missing.txt"
head -n 12 "$fixtures/mlp__fwd__00.txt" > "$tmp/cut.txt"
expect 2 "cut.txt:12:[0-9]+: expected a 'return' statement" -- import "$tmp/cut.txt"
printf 'def f(x):\n  t1 = ltorch.neg(t0)\n  t0 = ltorch.neg(x)\n  return t1\n' > "$tmp/order.txt"
expect 2 "order.txt:2:19: 't0' is used before it is defined" -- import "$tmp/order.txt"
sed '16,17d' "$fixtures/mlp__fwd__00.txt" > "$tmp/deleted_line.txt"  # the statement defining `input`
expect 2 "deleted_line.txt:18:21: 'input' is read but never defined.*restore the line" -- import "$tmp/deleted_line.txt"
sed '35s/t14/t99/' "$fixtures/mlp__fwd__00.txt" > "$tmp/return_undefined.txt"
expect 2 "return_undefined.txt:35:[0-9]+: 't99' is read but never defined" -- import "$tmp/return_undefined.txt"
expect 0 "round trip OK" -- import "$src/tests/fixtures/thunder_cpu/gpt_block__bwd__00.python.txt" --depth 0 --check
expect 0 "passed: mlp" -- run --model mlp
expect 0 "verdict: equivalent" -- compare --model linear --order jit,ddp --order ddp,jit --world 2
expect 0 "verdict: equivalent" -- compare --model mlp --order jit,fsdp --order fsdp,jit --world 3
expect 0 "verdict: equivalent" -- compare --model gpt --order jit,fsdp --order fsdp,jit --world 3
expect 0 "verdict: equivalent" -- compare --model gpt --order jit,ddp --order ddp,jit --world 3
# Semantics modes: thunder-2024-03 fails ddp after jit in the all-reduce's meta check, keeps the partial
# backward as a stage; fsdp after jit and the workaround pass; thunder-2026-01 refuses ddp before jit.
expect 1 "ValueError: None had an unexpected type.*|Fix:" -- compare --model linear --order jit,ddp --order ddp,jit --world 2 --semantics thunder-2024-03
expect 0 "verdict: equivalent \(linear, world 2, cpu, thunder-2024-03\)" -- compare --model linear --order jit,fsdp --order fsdp,jit --world 2 --semantics thunder-2024-03
expect 0 "verdict: equivalent \(linear, world 2, cpu, thunder-2024-03, workaround process-group\)" -- compare --model linear --order jit,ddp --order ddp,jit --world 2 --semantics thunder-2024-03 --workaround process-group
expect 1 "P1 \[ddp,jit thunder-2026-01\]: refused: TypeError: Thunder DDP only works on ThunderModule, got <class 'torch.nn.modules.linear.Linear'>" -- compare --model linear --order jit,ddp --order ddp,jit --world 2 --semantics thunder-2026-01
expect 1 "ddp bucketing \(25 MB\) \([0-9.]+ ms, FAILED at bound symbol [0-9]+ \(torch_all_reduce_prim_impl\)\)" -- run --model linear --order jit,ddp --semantics thunder-2024-03 --stages
expect 2 "--semantics: unknown semantics 'thunder-2023' \(known: lazy, thunder-2024-03, thunder-2026-01\)" -- compare --model linear --order jit,ddp --order ddp,jit --world 2 --semantics thunder-2023
expect 2 "--workaround: workaround 'process-group' has nothing to work around in semantics 'lazy'" -- compare --model linear --order jit,ddp --order ddp,jit --world 2 --workaround process-group
expect 2 "--workaround: workaround 'process-group' has nothing to work around in semantics 'thunder-2026-01'" -- run --model linear --semantics thunder-2026-01 --workaround process-group
expect 2 "--semantics: unknown semantics 'eager'" -- rules --semantics eager
expect 2 "one-parameter-distribution" -- compare --model linear --order jit,ddp,fsdp --order ddp,jit --world 2
# Memory per stage: remat lowers what the forward saves; Delete Last Used lowers the backward's peak.
# (The forward saves each layer norm's mean and rstd: 1 280 bytes in this model.)
expect 0 "passed: gpt" -- run --model gpt --param layers=2 --order jit,remat --out "$tmp/remat.tvz.json"
expect 0 "forward   3 Rematerialization +peak live +[0-9.]+ MB \(after statement [0-9]+\)  saved for backward 0.676 MB" -- show "$tmp/remat.tvz.json" --memory
expect 2 "show --memory lists every stage: drop --stage" -- show "$tmp/remat.tvz.json" --memory --stage 0
# Hybrid sharding: fsdp within shard groups and ddp across them, on a 2 x 2 gloo mesh, both orders
# against averaged eager gradients; fsdp with ddp is refused and points to hsdp; the mesh is checked.
expect 0 "verdict: equivalent \(mlp, world 4, cpu, lazy\)" -- compare --model mlp --order jit,hsdp --order hsdp,jit --world 4 --shard-group 2
expect 0 "hsdp replicate \(2 ranks\)" -- run --model mlp --order jit,hsdp --world 4 --stages
expect 2 "or hsdp for fsdp within groups of ranks and ddp across the groups" -- compare --model mlp --order jit,fsdp,ddp --order jit,ddp --world 4
expect 2 "--shard-group: hsdp: a shard group of 3 ranks does not divide the world of 4 ranks" -- run --model mlp --order jit,hsdp --world 4 --shard-group 3
expect 2 "--shard-group: a shard group \(2 ranks\) is hsdp's mesh, and the order has no hsdp" -- compare --model mlp --order jit,fsdp --order fsdp,jit --world 4 --shard-group 2
# A pipeline's own outcome stands apart from its comparison's verdict: the order that passed is not
# labelled failed because the other side failed.
expect 1 "P1 \[ddp,jit thunder-2024-03\] vs P0 \[jit,ddp thunder-2024-03\]: not comparable: P0 \[jit,ddp thunder-2024-03\] failed" -- compare --model linear --order jit,ddp --order ddp,jit --world 2 --semantics thunder-2024-03 --out "$tmp/seed.tvz.json"
expect 0 "pipeline 1 \[ddp,jit thunder-2024-03\] world 2 cpu: passed; vs P0 \[jit,ddp thunder-2024-03\]: not comparable" -- show "$tmp/seed.tvz.json"
expect 0 "backward stage [0-9]+/[0-9]+: ddp bucketing \(25 MB\) \(FAILED at bound symbol" -- show "$tmp/seed.tvz.json" --pipeline 0 --trace backward --stage "ddp bucketing (25 MB)"
# `show FILE` runs in the front door, without LibTorch (the engine for everything else), and prints
# what the engine prints; a stored trace is parsed when shown: a damaged one is exit 2 with its path,
# line and column, where it is shown or up front with --check.
if ldd "$tool" | grep -q "libtorch\|libc10"; then
  echo "FAIL: $tool (the front door) loads LibTorch"; failures=$((failures + 1))
else
  passes=$((passes + 1))
fi
engine="$(dirname "$tool")/thunder-viz-engine"
if cmp -s <("$tool" show "$tmp/seed.tvz.json") <("$engine" show "$tmp/seed.tvz.json"); then
  passes=$((passes + 1))
else
  echo "FAIL: show prints differently in the front door and in the engine"; failures=$((failures + 1))
fi
/usr/bin/python3 - "$tmp/seed.tvz.json" "$tmp/damaged.tvz.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
stage = doc["pipelines"][1]["stages"]["forward"][0]
# A hand edit: the stage's text written whole (a capture keeps runs of its line table).
runs = stage.pop("lines")
text = "\n".join(doc["lines"][runs[r] + i] for r in range(0, len(runs), 2) for i in range(runs[r + 1]))
stage["text"] = text.replace("ltorch.linear(", "ltorch.linear((", 1)
json.dump(doc, open(sys.argv[2], "w"))
PY
expect 0 "backward stage" -- show "$tmp/damaged.tvz.json" --pipeline 0
expect 2 "damaged.tvz.json: /pipelines/1/stages/forward/0/text: the stored trace does not parse: line [0-9]+, column [0-9]+" -- show "$tmp/damaged.tvz.json" --pipeline 1 --trace forward --stage 0
expect 2 "/pipelines/1/stages/forward/0/text: the stored trace does not parse" -- show "$tmp/damaged.tvz.json" --check
expect 2 "/pipelines/1/stages/forward/0/text: the stored trace does not parse" -- show "$tmp/damaged.tvz.json" --memory
expect 2 "show --model: --pipeline, --stage, --memory and --check need a capture FILE" -- show --model linear --check
# A report covers every stage: --text refuses a damaged one as --html does, before writing either.
expect 2 "damaged.tvz.json: /pipelines/1/stages/forward/0/text: the stored trace does not parse: line [0-9]+, column [0-9]+: .*make it again" -- report "$tmp/damaged.tvz.json" --text "$tmp/damaged.txt"
expect 2 "/pipelines/1/stages/forward/0/text: the stored trace does not parse" -- report "$tmp/damaged.tvz.json" --html "$tmp/damaged.html" --text "$tmp/damaged.txt"
[[ ! -e $tmp/damaged.txt && ! -e $tmp/damaged.html ]] && passes=$((passes + 1)) || { echo "FAIL: a report of a damaged capture was written"; failures=$((failures + 1)); }
# An order naming no transform, a replayed rank outside the world: refused on load with the JSON path.
/usr/bin/python3 - "$tmp/seed.tvz.json" "$tmp" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["pipelines"][0]["spec"]["order"] = ["jit", "bogus"]
json.dump(doc, open(sys.argv[2] + "/bad_order.tvz.json", "w"))
doc = json.load(open(sys.argv[1]))
doc["pipelines"][1]["replay"]["ranks"][0]["rank"] = 9
json.dump(doc, open(sys.argv[2] + "/bad_rank.tvz.json", "w"))
PY
expect 2 "bad_order.tvz.json: /pipelines/0/spec/order/1: unknown transform 'bogus'; valid transforms: jit, ddp" -- show "$tmp/bad_order.tvz.json"
expect 2 "bad_order.tvz.json: /pipelines/0/spec/order/1: unknown transform 'bogus'" -- report "$tmp/bad_order.tvz.json" --text "$tmp/r.txt"
expect 2 "bad_rank.tvz.json: /pipelines/1/replay/ranks/0/rank: rank 9 is not a rank of the pipeline's world of 2" -- show "$tmp/bad_rank.tvz.json"
expect 2 "unknown transform 'dpp'" -- compare --model linear --order jit,dpp --order jit --world 2
# Replay timings as a Chrome trace (Perfetto): one complete event per timed bound symbol, prologue, forward, backward in turn.
expect 0 "passed: mlp" -- run --model mlp --chrome-trace "$tmp/mlp.chrome.json"
if /usr/bin/python3 - "$tmp/mlp.chrome.json" <<'PY'; then passes=$((passes + 1)); else echo "FAIL: chrome trace check"; failures=$((failures + 1)); fi
import json, sys
doc = json.load(open(sys.argv[1]))
events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
assert events, "no events"
assert {"forward", "backward"} <= {e["cat"] for e in events} <= {"prologue", "forward", "backward"}, {e["cat"] for e in events}
forward_end = max(e["ts"] + e["dur"] for e in events if e["cat"] == "forward")
assert all(e["ts"] >= forward_end - 1e-6 for e in events if e["cat"] == "backward"), "backward starts before forward ends"
assert all(e["dur"] >= 0 and "output" in e["args"] for e in events)
assert any("host clock" in e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name")
PY
expect 2 "cannot write" -- run --model linear --chrome-trace "$tmp/no/such/dir/t.json"
expect 2 "add --device cuda" -- run --model mlp --cuda-graph
# Turning the generated kernels off is accepted everywhere (it changes nothing on the CPU).
expect 0 "passed: mlp" -- run --model mlp --no-generated-kernels
expect 0 "verdict: equivalent" -- compare --model mlp --order jit,ddp --order ddp,jit --world 2 --no-generated-kernels
# A capture holding a CUDA graph run (as `run --cuda-graph --device cuda` writes it) shows it in the reports.
expect 0 "passed: mlp" -- run --model mlp --out "$tmp/graph.tvz.json"
/usr/bin/python3 - "$tmp/graph.tvz.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["pipelines"][0]["replay"]["ranks"][0]["cuda_graph"] = {
    "ran": True, "steps": 20, "step_ms": 46.868, "graph_ms": 6.674, "max_abs_difference": 0, "error": ""}
json.dump(doc, open(sys.argv[1], "w"))
PY
expect 0 "" -- report "$tmp/graph.tvz.json" --text "$tmp/graph.txt" --html "$tmp/graph.html"
if grep -q "rank 0: CUDA graph replayed, the same numbers as the step" "$tmp/graph.txt" &&
   grep -q "CUDA graph: step 46.868 ms, as one graph 6.674 ms (0.142x), mean of 20 calls" "$tmp/graph.html"; then
  passes=$((passes + 1))
else
  echo "FAIL: the CUDA graph line in the reports"; failures=$((failures + 1))
fi
# No GPU here: --device cuda is a clear error (exit 2) and the capture of what was asked is still written.
if ! nvidia-smi -L > /dev/null 2>&1; then
  expect 2 "no CUDA.*--device cpu" -- run --model mlp --device cuda --out "$tmp/cuda.tvz.json"
  if grep -q "no CUDA" "$tmp/cuda.tvz.json" 2>/dev/null; then passes=$((passes + 1)); else echo "FAIL: capture of the refused cuda run"; failures=$((failures + 1)); fi
  expect 2 "no CUDA.*--device cpu" -- compare --model mlp --order jit,ddp --order ddp,jit --world 2 --device cuda
fi
# --from: the model of a capture runs again under new orders. A built-in model by its name and
# parameters; --from with --model is refused; imported printouts have no model to run.
expect 0 "" -- run --model mlp --param hidden=32 --out "$tmp/mlp_from.tvz.json"
expect 0 "verdict: equivalent \(mlp, world 2" -- compare --from "$tmp/mlp_from.tvz.json" --order jit,ddp --order ddp,jit --world 2
expect 2 "excludes|--model" -- run --from "$tmp/mlp_from.tvz.json" --model gpt
/usr/bin/python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["model"]["name"] = "imported"; json.dump(c, open(sys.argv[2], "w"))' \
  "$tmp/mlp_from.tvz.json" "$tmp/imported.tvz.json"
expect 2 "imported from Thunder describe no module" -- run --from "$tmp/imported.tvz.json"
# A model saved from Python with its inputs: rebuilt from the capture, replayed on the stored weights
# and checked against eager's stored numbers; a broken tensors file is bad input naming it.
pydir="$(cd "$(dirname "$tool")/../python" 2>/dev/null && pwd)"
if [ -n "$pydir" ] && PYTHONPATH="$pydir" /usr/bin/python3 -c 'import thunder_viz' > /dev/null 2>&1; then
  PYTHONPATH="$pydir" /usr/bin/python3 - "$tmp/py.tvz.json" > "$tmp/py.log" 2>&1 <<'PY'
import sys, torch, thunder_viz as tv
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.norm = torch.nn.Linear(8, 8), torch.nn.LayerNorm(8)
    def forward(self, x):
        return self.norm(torch.tanh(self.fc(x)) + x)
torch.manual_seed(0)
tm = tv.jit(Block())
insp = tv.attach(tm)
x = torch.randn(3, 8)
tm(x).sum().backward()
insp.save(sys.argv[1], inputs=(x,))
PY
  expect 0 "verdict: equivalent \(Block, world 2" -- compare --from "$tmp/py.tvz.json" --order jit,ddp --order ddp,jit --world 2
  expect 0 "on the weights and inputs stored with it: a re-run checks" -- compare --from "$tmp/py.tvz.json" --order jit,fsdp --order fsdp,jit --world 2
  expect 0 "passed: Block \[jit,remat\] against the eager numbers stored with the capture" -- run --from "$tmp/py.tvz.json" --order jit,remat
  printf 'not a torch file' > "$tmp/py.tvz.json.tensors.pt"
  expect 2 "py.tvz.json.tensors.pt: not a file torch.save wrote" -- run --from "$tmp/py.tvz.json"
else
  echo "SKIP: --from a Python capture: the thunder_viz Python package is not built"
fi
echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
