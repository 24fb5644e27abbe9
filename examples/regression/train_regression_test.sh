#!/usr/bin/env bash
# train_regression: writes its data set, fits it on 2 CPU devices (the test
# error after 20 epochs under a tenth of the first epoch's), and refuses a
# folder without the files in one line.
set -euo pipefail
bin="$(dirname "$0")/train_regression"
[[ -x "$bin" ]] || bin="examples/regression/train_regression"
out="${TEST_TMPDIR:-/tmp}/regression"
mkdir -p "$out"
"$bin" --make_data="$out"
"$bin" --data_dir="$out" --devices=cpu:2 --epochs=20 | tee "$out/log"
first="$(sed -n 's/^epoch 1: .*test mse \([0-9.]*\)$/\1/p' "$out/log")"
last="$(sed -n 's/^epoch 20: .*test mse \([0-9.]*\)$/\1/p' "$out/log")"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 10) }' ||
  { echo "FAIL: test mse $first -> $last"; exit 1; }
set +e
"$bin" --data_dir="$out/none" >"$out/err" 2>&1
rc=$?
set -e
[[ $rc -eq 1 && "$(wc -l <"$out/err")" -eq 1 ]] ||
  { cat "$out/err"; echo "FAIL: a missing folder gave exit $rc"; exit 1; }
grep -q "train_inputs.npy: cannot open" "$out/err" || { cat "$out/err"; exit 1; }
echo PASS
