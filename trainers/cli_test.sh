#!/usr/bin/env bash
# Each bad invocation of each trainer exits non-zero with a one-line message
# that names the problem; --help works. Args: the two trainer binaries.
set -uo pipefail

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_error <binary> <text the message must hold> <args...>
expect_error() {
  local bin="$1" want="$2"
  shift 2
  local err rc
  err="$(timeout 60 "$bin" "$@" 2>&1 >/dev/null)"
  rc=$?
  local name
  name="$(basename "$bin") $*"
  [[ $rc -ne 0 ]] || fail "$name: exit code 0"
  [[ $rc -ne 124 ]] || fail "$name: hung"
  [[ "$err" == *"$want"* ]] || fail "$name: message lacks '$want': $err"
  [[ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ]] ||
    fail "$name: message is not one line: $err"
}

for bin in "$1" "$2"; do
  expect_error "$bin" "--bogus" --bogus
  expect_error "$bin" "--batch_size: must be a number above 0, got '0'" \
    --batch_size=0
  expect_error "$bin" "--lr: must be a number above 0, got '-1'" --lr=-1
  expect_error "$bin" "--epochs: must be a number above 0, got 'x'" --epochs=x
  expect_error "$bin" "cuda:0 does not exist; this machine has 0 usable GPUs; use --devices=cpu" \
    --devices=cuda:0
  expect_error "$bin" "--devices=gpu is not understood" --devices=gpu
  expect_error "$bin" "unknown backend 'carrier'" --backend=carrier
  # "needs GPUs" with CUDA, "is not in this build" without (cpu_only).
  expect_error "$bin" "the nccl backend" --backend=nccl
  expect_error "$bin" "apt-get install dataset-fashion-mnist" \
    --data_dir=/nonexistent
  expect_error "$bin" "--metrics_out: cannot write /nonexistent/m.jsonl" \
    --metrics_out=/nonexistent/m.jsonl --limit=8 --test_limit=8 --epochs=1 \
    --batch_size=8
  help="$("$bin" --help)" || fail "$bin --help: non-zero exit"
  [[ "$help" == *"--devices"* && "$help" == *"--plot_out"* ]] ||
    fail "$bin --help lacks the flags"
done

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all CLI checks passed"
