#!/usr/bin/env bash
# Faults never abort and saves leave nothing behind, as a user of the command line meets them:
# a thread limit below what a World needs, memory exhaustion, unbounded inputs, empty, linked and read-only outputs,
# control bytes in an input that an error message quotes.
# Usage: faults_test.sh THUNDER_VIZ
set -uo pipefail
tool=$1
failures=0
passes=0
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

# check CODE PATTERN COMMAND...: runs COMMAND, checks its exit code and that PATTERN is in its output.
check() {
  local code=$1 pattern=$2
  shift 2
  "$@" > "$tmp/out" 2>&1
  local got=$?
  if [[ $got -ne $code ]] || ! grep -qE -- "$pattern" "$tmp/out"; then
    echo "FAIL: $* -> exit $got (want $code), pattern '$pattern'"
    sed 's/^/    /' "$tmp/out" | head -20
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}

# A thread limit (ulimit -u) below what 32 ranks need: an error naming the limit, exit 1, no abort.
# RLIMIT_NPROC does not bind root, so root runs the tool as nobody.
under_thread_limit() {
  if [[ $(id -u) -eq 0 ]]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups bash -c 'ulimit -u 40 && exec "$@"' - "$@"
  else
    local mine
    mine=$(ps -L -u "$(id -u)" --no-headers | wc -l)
    bash -c 'ulimit -u "$0" && exec "$@"' $((mine + 30)) "$@"
  fi
}
if [[ $(id -u) -eq 0 ]] && ! command -v setpriv > /dev/null; then
  echo "SKIP: the thread-limit case needs setpriv (util-linux) to run as another user than root"
elif [[ $(id -u) -eq 0 ]] && ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$tool"; then
  echo "SKIP: the thread-limit case runs the tool as nobody, who cannot execute $tool"
else
  check 1 "could not start (a thread|gloo's threads).*ulimit -u" under_thread_limit "$tool" compare --model linear \
    --order jit,ddp --order ddp,jit --world 32
fi

# Memory exhaustion (an address-space limit below the model's weights): what ran out and what to do,
# exit 1, no LibTorch backtrace.
check 1 "^error: out of memory \(tried to allocate [0-9]+ bytes\); try a smaller model" \
  bash -c 'ulimit -v 4000000 && exec "$@"' - "$tool" run --model gpt --param d_model=4096 --param layers=8 --param vocab=50000
if grep -q "frame #" "$tmp/out"; then
  echo "FAIL: the out-of-memory error carries LibTorch's backtrace"
  failures=$((failures + 1))
else
  passes=$((passes + 1))
fi

# Unbounded inputs end at the size limit.
check 2 "/dev/zero.*larger than 1024 MiB" "$tool" show /dev/zero

# An empty output name is bad input, not a silent no-op.
check 2 "--out.*file name is empty" "$tool" run --model linear --out ""
check 2 "--out.*file name is empty" "$tool" rules --model linear --semantics lazy --out ""
check 2 "--junit.*file name is empty" "$tool" batch "$(dirname "$0")/../../samples/batch/config.json" --junit ""
check 2 "--html.*file name is empty" "$tool" report /dev/null --html ""

# A symbolic link is written through; a read-only file is refused and kept.
mkdir -p "$tmp/real"
ln -s real/run.tvz.json "$tmp/link.tvz.json"
check 0 "passed: linear" "$tool" run --model linear --out "$tmp/link.tvz.json"
if [[ -L $tmp/link.tvz.json && -s $tmp/real/run.tvz.json ]]; then
  passes=$((passes + 1))
else
  echo "FAIL: saving onto a link did not write its target"
  failures=$((failures + 1))
fi
echo "keep" > "$tmp/readonly.tvz.json"
chmod 0444 "$tmp/readonly.tvz.json"
check 2 "readonly.tvz.json.*read-only \(mode 0444\).*chmod u\+w" "$tool" run --model linear --out "$tmp/readonly.tvz.json"
if [[ $(cat "$tmp/readonly.tvz.json") == keep ]]; then passes=$((passes + 1)); else
  echo "FAIL: the read-only file was replaced"
  failures=$((failures + 1))
fi

# An output that exists and is not a regular file (a device node, a FIFO, or a link to one) is refused and
# left as it is: a save renames a new file over its target, which would replace the node itself. Private
# nodes only (mknod needs root; mkfifo does not): never the system's /dev.
mkfifo "$tmp/fifo.tvz.json"
check 2 "cannot write .*fifo.tvz.json: it is a named pipe \(FIFO\), not a regular file \(left untouched\)" \
  "$tool" run --model linear --out "$tmp/fifo.tvz.json"
ln -s fifo.tvz.json "$tmp/fifo_link.json"
check 2 "fifo.tvz.json is a named pipe" "$tool" run --model linear --chrome-trace "$tmp/fifo_link.json"
if mknod -m 666 "$tmp/null" c 1 3 2>/dev/null; then
  check 2 "cannot write .*null: it is a character device" "$tool" compare --model linear --order jit --order jit --out "$tmp/null"
  check 2 "cannot write .*null: it is a character device" "$tool" report "$tmp/link.tvz.json" --text "$tmp/null"
  if [[ -c $tmp/null ]]; then passes=$((passes + 1)); else echo "FAIL: a device node was replaced"; failures=$((failures + 1)); fi
fi
if [[ -p $tmp/fifo.tvz.json ]]; then passes=$((passes + 1)); else echo "FAIL: a FIFO was replaced"; failures=$((failures + 1)); fi

# An output that cannot be written is refused before the run, which never starts (nothing printed); one
# that fails after the run (a file size limit) comes after the printed results, whose exit code a
# difference keeps (1), else 2.
check 2 "cannot write .*nodir/x.tvz.json: the folder .*nodir does not exist \(No such file or directory\); create it" \
  "$tool" run --model linear --out "$tmp/nodir/x.tvz.json"
if grep -q "passed" "$tmp/out"; then echo "FAIL: the run started before its --out was refused"; failures=$((failures + 1)); fi
check 2 "cannot write .*nodir/t.json: the folder .*nodir does not exist" \
  "$tool" compare --model linear --order jit --order jit --out "$tmp/ok.tvz.json" --chrome-trace "$tmp/nodir/t.json"
if grep -q "verdict" "$tmp/out" || [[ -e $tmp/ok.tvz.json ]]; then
  echo "FAIL: compare ran before its --chrome-trace was refused"; failures=$((failures + 1))
fi
echo keep > "$tmp/big.tvz.json"
size_limited() { (ulimit -f 1; trap '' XFSZ; exec "$@") 2>&1 | cat; return "${PIPESTATUS[0]}"; }
printed() {  # printed PATTERN: the output of the last check holds PATTERN
  if grep -qE -- "$1" "$tmp/out"; then passes=$((passes + 1)); else echo "FAIL: '$1' was not printed"; failures=$((failures + 1)); fi
}
check 2 "cannot write .*big.tvz.json: cannot write the temporary file: File too large \(the results above are not saved there\)" \
  size_limited "$tool" compare --model linear --order jit,ddp --order ddp,jit --world 2 --out "$tmp/big.tvz.json"
printed "^verdict: equivalent"
check 1 "cannot write .*big.tvz.json: cannot write the temporary file" \
  size_limited "$tool" compare --model linear --order jit,ddp --order ddp,jit --world 2 --semantics thunder-2024-03 --out "$tmp/big.tvz.json"
printed "^verdict: not comparable"
if [[ $(cat "$tmp/big.tvz.json") == keep ]]; then passes=$((passes + 1)); else echo "FAIL: a failed save changed the file"; failures=$((failures + 1)); fi

# A save killed mid-way leaves a temporary file; the next save of the same file removes it.
( exec sleep 0 ) & dead=$!
wait $dead
echo partial > "$tmp/real/.run.tvz.json.tmp-$dead-0"
check 0 "passed: linear" "$tool" run --model linear --out "$tmp/real/run.tvz.json"
if [[ -e $tmp/real/.run.tvz.json.tmp-$dead-0 ]]; then
  echo "FAIL: a killed save's temporary file was left behind"
  failures=$((failures + 1))
else
  passes=$((passes + 1))
fi

# Out-of-range numbers, duplicate keys and stage numbers beyond any list are bad input with a place.
printf '{"models": ["linear"], "models": ["mlp"]}' > "$tmp/dup.json"
check 2 'dup.json: /models: the key "models" appears twice' "$tool" batch "$tmp/dup.json" --out-dir "$tmp/b1"
printf '{"models": ["linear"], "world_sizes": [1e400]}' > "$tmp/big.json"
check 2 'big.json: /world_sizes/0: number overflow.*range of a double' "$tool" batch "$tmp/big.json" --out-dir "$tmp/b2"
check 2 "--stage 99999999999999999999: no stage" "$tool" show "$tmp/real/run.tvz.json" --stage 99999999999999999999
if [[ ! -e /dev/nvidia0 ]]; then
  check 2 "parameter 'device' is 'cuda:0', but this build's LibTorch has no CUDA.*device=cpu" "$tool" run --model linear \
    --param device=cuda:0
fi

# Control bytes of the input are escaped in error messages, never sent to the terminal.
printf 'def f(x):\n  t0 = \033[31mltorch.neg(x\n' > "$tmp/escape.txt"
check 2 'escape.txt:2:[0-9]+: ' "$tool" import "$tmp/escape.txt"
if grep -q $'\033' "$tmp/out"; then
  echo "FAIL: an error message carried a raw ESC byte"
  failures=$((failures + 1))
else
  passes=$((passes + 1))
fi

echo "faults: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
