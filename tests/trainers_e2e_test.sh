#!/usr/bin/env bash
# End to end on the installed Fashion-MNIST (Debian's dataset-fashion-mnist):
#  1. lenet_scratch on 2 CPU devices, 4 epochs: test accuracy >= 0.70 (the
#     chapter's recipe starts slowly; PyTorch reached 0.19, 0.65, 0.70, 0.77
#     here), with the metrics file, the plot and the closing line;
#  2. the same seed gives the same numbers bit for bit;
#  3. resnet_dp on 2 CPU devices, 48 steps on 512 images: the loss falls;
#  4. the same with --precision=bf16 on a CPU with AVX512_BF16 or AMX: the
#     loss falls as well, and ends within a tenth of float32's; on other
#     CPUs, a refusal naming the missing instructions.
# Args: the lenet_scratch and resnet_dp binaries.
set -euo pipefail

lenet="$1"
resnet="$2"
out="${TEST_TMPDIR:-/tmp}"

fail() {
  echo "FAIL: $*"
  exit 1
}

# field <json line> <key>: a number from one JSON line.
field() {
  sed -E "s/.*\"$2\":([-0-9.e+]+).*/\1/" <<<"$1"
}

# 1. Accuracy after 4 epochs.
"$lenet" --devices=cpu:2 --epochs=4 --metrics_out="$out/lenet.jsonl" \
  --plot_out="$out/lenet.svg" >"$out/lenet.txt" 2>"$out/lenet.err"
cat "$out/lenet.txt"
[[ "$(head -n 1 "$out/lenet.jsonl")" == '{"run":{"started":'* ]] ||
  fail "the metrics file does not start with the run line"
[[ "$(grep -c '^{"epoch"' "$out/lenet.jsonl")" -eq 4 ]] ||
  fail "expected 4 epoch lines"
last="$(grep '^{"epoch"' "$out/lenet.jsonl" | tail -n 1)"
acc="$(field "$last" test_acc)"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.70) }' ||
  fail "lenet_scratch test accuracy $acc after 4 epochs, expected >= 0.70"
grep -q '^test acc: 0\.[0-9][0-9], [0-9.]* sec/epoch on \[cpu:0, cpu:1\]$' \
  "$out/lenet.txt" || fail "no closing line"
grep -q '<polyline' "$out/lenet.svg" || fail "no curves in the plot"
grep -q '^epoch 1/4 \[' "$out/lenet.err" || fail "no progress lines"

# 2. Reproducible: two runs, same seed, identical numbers (times aside).
for run in a b; do
  "$lenet" --devices=cpu:3 --epochs=2 --limit=3000 --test_limit=1000 \
    --seed=5 --metrics_out="$out/repro_$run.jsonl" >/dev/null 2>&1
  grep '^{"epoch"' "$out/repro_$run.jsonl" |
    sed -E 's/"seconds":[^,]*,"eval_seconds":[^,]*,"images_per_sec":[^,]*,"comm_fraction":[^}]*//' \
      >"$out/repro_$run.numbers"
done
cmp "$out/repro_a.numbers" "$out/repro_b.numbers" ||
  fail "two runs with the same seed differ"

# 3. ResNet-18: a few dozen steps on a subset, the loss falls.
"$resnet" --devices=cpu:2 --epochs=3 --limit=512 --batch_size=32 --lr=0.05 \
  --test_limit=256 --metrics_out="$out/resnet.jsonl" >"$out/resnet.txt" \
  2>/dev/null
cat "$out/resnet.txt"
first="$(field "$(grep '^{"epoch"' "$out/resnet.jsonl" | head -n 1)" loss)"
final="$(field "$(grep '^{"epoch"' "$out/resnet.jsonl" | tail -n 1)" loss)"
awk -v f="$first" -v l="$final" 'BEGIN { exit !(l < 0.75 * f) }' ||
  fail "resnet_dp loss went from $first to $final; expected a fall of a quarter"
# 4. Mixed precision where the CPU has bfloat16 arithmetic, a clear refusal
# elsewhere.
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  "$resnet" --devices=cpu:2 --epochs=3 --limit=512 --batch_size=32 --lr=0.05 \
    --test_limit=256 --precision=bf16 --metrics_out="$out/resnet_bf16.jsonl" \
    >"$out/resnet_bf16.txt" 2>/dev/null
  first16="$(field "$(grep '^{"epoch"' "$out/resnet_bf16.jsonl" | head -n 1)" loss)"
  final16="$(field "$(grep '^{"epoch"' "$out/resnet_bf16.jsonl" | tail -n 1)" loss)"
  awk -v f="$first16" -v l="$final16" -v r="$final" \
    'BEGIN { exit !(l < 0.75 * f && l < 1.1 * r && l > 0.9 * r) }' ||
    fail "resnet_dp --precision=bf16 loss went from $first16 to $final16" \
      "(float32: $first -> $final); expected a fall and a tenth of float32's"
  bf16="bf16 loss $first16 -> $final16"
else
  if "$resnet" --devices=cpu:2 --epochs=1 --limit=64 --precision=bf16 \
    >/dev/null 2>"$out/bf16.err"; then
    fail "--precision=bf16 ran on a CPU without AVX512_BF16 or AMX"
  fi
  grep -q 'need the AVX512_BF16 or AMX-BF16 instructions' "$out/bf16.err" ||
    fail "no clear refusal of --precision=bf16: $(cat "$out/bf16.err")"
  bf16="bf16 refused (no AVX512_BF16 or AMX here)"
fi
echo "PASS: lenet test acc $acc; resnet loss $first -> $final; $bf16"
