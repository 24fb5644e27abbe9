#!/usr/bin/env bash
# The example trains: two epochs over two CPU devices reach a test accuracy
# an MLP reaches on Fashion-MNIST (about 0.85); a chance-level model is 0.10.
set -euo pipefail
bin="examples/mlp/train_mlp"
data="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"

missing="$("$bin" /nonexistent/fashion-mnist 2>&1)" && {
  echo "a missing data folder was not an error"; exit 1; }
if [[ "$(wc -l <<<"$missing")" != 1 || "$missing" != "train_mlp: error: "* ]]; then
  echo "a missing data folder should give one error line, got:"
  echo "$missing"
  exit 1
fi

# Devices as the trainers' --devices; one that is not there is one line.
bad="$("$bin" "$data" cuda:7 2>&1)" && { echo "cuda:7 was not an error"; exit 1; }
if [[ "$(wc -l <<<"$bad")" != 1 || "$bad" != "train_mlp: error: "*cuda:7* ]]; then
  echo "a device that is not there should give one error line naming it, got:"
  echo "$bad"
  exit 1
fi

out="$("$bin" "$data")"
echo "$out"
acc="$(sed -nE 's/^epoch 2: loss [0-9.]+, test acc ([0-9.]+)$/\1/p' <<<"$out")"
if [[ -z "$acc" ]]; then
  echo "no 'epoch 2: ... test acc' line"; exit 1
fi
awk -v a="$acc" 'BEGIN { exit !(a >= 0.80) }' || {
  echo "test accuracy $acc after two epochs is below 0.80: it did not learn"
  exit 1
}
echo "PASS: test accuracy $acc"
