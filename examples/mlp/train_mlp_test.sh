#!/usr/bin/env bash
# The example trains: two epochs over two CPU devices reach a test accuracy
# an MLP reaches on Fashion-MNIST (about 0.85); a chance-level model is 0.10.
set -euo pipefail
bin="examples/mlp/train_mlp"
data="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"

# --help exits 0 and names the flags; a bad flag is a usage error (exit 2).
help="$("$bin" --help)" || { echo "--help did not exit 0"; exit 1; }
for flag in --data_dir --devices --epochs --on_process_loss --checkpoint; do
  grep -q -- "$flag" <<<"$help" || { echo "--help does not name $flag"; exit 1; }
done
code=0
"$bin" --epochs=0 2>/dev/null || code=$?
[[ "$code" == 2 ]] || { echo "--epochs=0 exited $code, not 2"; exit 1; }
code=0
"$bin" --no_such_flag 2>/dev/null || code=$?
[[ "$code" == 2 ]] || { echo "an unknown flag exited $code, not 2"; exit 1; }
# A checkpoint file and how often to write it come together.
for half in --checkpoint="${TEST_TMPDIR:-/tmp}/mlp.ckpt" --checkpoint_steps=5; do
  code=0
  "$bin" "$half" 2>/dev/null || code=$?
  [[ "$code" == 2 ]] || { echo "$half alone exited $code, not 2"; exit 1; }
done

missing="$("$bin" --data_dir=/nonexistent/fashion-mnist 2>&1)" && {
  echo "a missing data folder was not an error"; exit 1; }
if [[ "$(wc -l <<<"$missing")" != 1 || "$missing" != "train_mlp: error: "* ]]; then
  echo "a missing data folder should give one error line, got:"
  echo "$missing"
  exit 1
fi

# Devices as the trainers' --devices; one that is not there is one line.
bad="$("$bin" --data_dir="$data" --devices=cuda:7 2>&1)" && { echo "cuda:7 was not an error"; exit 1; }
if [[ "$(wc -l <<<"$bad")" != 1 || "$bad" != "train_mlp: error: "*cuda:7* ]]; then
  echo "a device that is not there should give one error line naming it, got:"
  echo "$bad"
  exit 1
fi

out="$("$bin" --data_dir="$data")"
echo "$out"
acc="$(sed -nE 's/^epoch 2: loss [0-9.]+, test acc ([0-9.]+), .* s, comm [0-9.]+% of it \([0-9.]+% exposed\)$/\1/p' <<<"$out")"
if [[ -z "$acc" ]]; then
  echo "no 'epoch 2: ... test acc' line"; exit 1
fi
awk -v a="$acc" 'BEGIN { exit !(a >= 0.80) }' || {
  echo "test accuracy $acc after two epochs is below 0.80: it did not learn"
  exit 1
}
echo "PASS: test accuracy $acc"
