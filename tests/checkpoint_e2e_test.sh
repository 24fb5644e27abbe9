#!/usr/bin/env bash
# Checkpoints end to end, on the installed Fashion-MNIST:
#  1. lenet_scratch: 2 epochs, then --resume to 4, ends with the parameters
#     and metrics of 4 epochs in one go, bit for bit;
#  2. resnet_dp (batch norm statistics in the checkpoint): the same, and
#     both trainers with --precision=bf16 where the CPU has AVX512_BF16 or
#     AMX, and a float32 checkpoint resumed with --precision=bf16;
#  3. SIGTERM mid-epoch: exit 143, a checkpoint, and the resumed run ends
#     bit for bit where the uninterrupted one does; SIGUSR1 and SIGHUP
#     stop with a checkpoint too;
#  4. a checkpoint from 2 devices resumes on 1 and on 4: the next step
#     equals the uninterrupted run's within 1e-6 (only the split changed);
#  5. a corrupt checkpoint, another model's, and other data are refused
#     with a message saying what differs.
# Args: the lenet_scratch and resnet_dp binaries.
set -euo pipefail

lenet="$1"
resnet="$2"
out="${TEST_TMPDIR:-/tmp}"

fail() {
  echo "FAIL: $*"
  exit 1
}

# The epochs' metrics without the timings, which differ between runs (and
# without the run line, which holds the start time).
numbers() {
  grep '^{"epoch"' "$1" |
    sed -E 's/"seconds":[^,]*,"eval_seconds":[^,]*,"images_per_sec":[^,]*,"comm_fraction":[^}]*//'
}

# close_params <a> <b> <tolerance>: LeNet's parameters, tensor by tensor,
# within max|a - b| <= tolerance * max|a| (the float32 rounding of a sum
# split another way is relative to the tensor's scale, not to each value).
close_params() {
  python3 - "$1" "$2" "$3" <<'PY'
import array, sys
def tensor_bytes(path):
    # The float32 values of a --params_out file (magic line, u64 header
    # length, JSON header, values, u64 checksum), one tensor after another.
    import struct
    data = open(path, "rb").read()
    magic = b"ringlet checkpoint 1\n"
    if not data.startswith(magic):
        sys.exit(f"{path} is not a ringlet parameter file")
    (n,) = struct.unpack_from("<Q", data, len(magic))
    return data[len(magic) + 8 + n:len(data) - 8]
a, b = array.array("f"), array.array("f")
a.frombytes(tensor_bytes(sys.argv[1]))
b.frombytes(tensor_bytes(sys.argv[2]))
sizes = {"W1": 180, "b1": 20, "W2": 25000, "b2": 50, "W3": 102400, "b3": 128,
         "W4": 1280, "b4": 10}
if len(a) != len(b) or len(a) != sum(sizes.values()):
    sys.exit(f"sizes differ: {len(a)} and {len(b)} values")
at, worst = 0, 0.0
for name, n in sizes.items():
    x, y = a[at:at + n], b[at:at + n]
    scale = max(abs(v) for v in x)
    diff = max(abs(p - q) for p, q in zip(x, y))
    worst = max(worst, diff / scale)
    print(f"  {name}: max |difference| / max |value| = {diff / scale:.3g}")
    at += n
sys.exit(0 if worst <= float(sys.argv[3]) else 1)
PY
}

# 1 and 2: 2 + 2 epochs equal 4.
check_two_plus_two() {
  local name="$1" bin="$2"
  shift 2
  local dir="$out/$name"
  mkdir -p "$dir"
  "$bin" "$@" --epochs=4 --params_out="$dir/straight.bin" \
    --metrics_out="$dir/straight.jsonl" >/dev/null 2>&1 ||
    fail "$name: the straight run failed"
  "$bin" "$@" --epochs=2 --checkpoint_dir="$dir/ckpt" >/dev/null 2>&1 ||
    fail "$name: the first half failed"
  compgen -G "$dir/ckpt/*.ckpt" >/dev/null || fail "$name: no checkpoint written"
  "$bin" "$@" --epochs=4 --checkpoint_dir="$dir/ckpt" --resume \
    --params_out="$dir/resumed.bin" --metrics_out="$dir/resumed.jsonl" \
    >"$dir/resumed.txt" 2>&1 || fail "$name: the resumed run failed"
  cmp "$dir/straight.bin" "$dir/resumed.bin" ||
    fail "$name: 2 + 2 epochs differ from 4 epochs"
  diff <(numbers "$dir/straight.jsonl") <(numbers "$dir/resumed.jsonl") ||
    fail "$name: the metrics of 2 + 2 epochs differ from 4 epochs"
  grep -q '^epoch 3/4:' "$dir/resumed.txt" || fail "$name: no epoch 3 line"
  grep -q '^epoch 1/4:' "$dir/resumed.txt" &&
    fail "$name: the resumed run trained epoch 1 again"
  echo "PASS: $name 2 + 2 epochs = 4 epochs, bit for bit"
}

check_two_plus_two lenet_scratch "$lenet" --devices=cpu:2 --limit=2000 \
  --test_limit=200 --lr=0.9 --seed=3
# AdamW's moments and step travel in the checkpoint too.
check_two_plus_two lenet_adamw "$lenet" --devices=cpu:2 --limit=2000 \
  --test_limit=200 --optimizer=adamw --weight_decay=0.01 --seed=3
# Three batches a step: a checkpoint's position counts steps.
check_two_plus_two lenet_accumulate "$lenet" --devices=cpu:2 --limit=2000 \
  --test_limit=200 --accumulate_steps=3 --batch_size=100 --seed=3
check_two_plus_two resnet_dp "$resnet" --devices=cpu:2 --limit=96 \
  --test_limit=32 --batch_size=32 --lr=0.05 --seed=3
# Mixed precision where the CPU has bfloat16 arithmetic: the same, float32
# master weights in the checkpoint.
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  check_two_plus_two resnet_dp_bf16 "$resnet" --devices=cpu:2 --limit=96 \
    --test_limit=32 --batch_size=32 --lr=0.05 --seed=3 --precision=bf16
  check_two_plus_two lenet_bf16 "$lenet" --devices=cpu:2 --limit=2000 \
    --test_limit=200 --lr=0.9 --seed=3 --precision=bf16
  # A float32 checkpoint continues in bf16 (the weights stay float32).
  "$resnet" --devices=cpu:2 --limit=96 --test_limit=32 --batch_size=32 \
    --lr=0.05 --seed=3 --epochs=5 --precision=bf16 \
    --checkpoint_dir="$out/resnet_dp/ckpt" --resume >"$out/to_bf16.txt" 2>&1 ||
    fail "resuming a float32 checkpoint in bf16 failed: $(cat "$out/to_bf16.txt")"
  grep -q '^epoch 5/5:' "$out/to_bf16.txt" ||
    fail "no bf16 epoch after the float32 ones: $(cat "$out/to_bf16.txt")"
  echo "PASS: a float32 checkpoint resumes with --precision=bf16"
fi

# 3. SIGTERM in the middle of epoch 2.
dir="$out/signal"
mkdir -p "$dir"
flags=(--devices=cpu:2 --limit=20000 --test_limit=200 --batch_size=64
  --epochs=3 --seed=4)
"$lenet" "${flags[@]}" --params_out="$dir/straight.bin" >/dev/null 2>&1
"$lenet" "${flags[@]}" --checkpoint_dir="$dir/ckpt" >"$dir/run.txt" \
  2>"$dir/run.err" &
pid=$!
# Up to 5 minutes: other large tests may share the cores.
for _ in $(seq 3000); do
  grep -q '^epoch 2/3 \[#' "$dir/run.err" && break
  sleep 0.1
done
grep -q '^epoch 2/3 \[#' "$dir/run.err" || fail "SIGTERM: epoch 2 never started"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
((status == 143)) || fail "SIGTERM: exit $status, expected 143; $(cat "$dir/run.err")"
grep -q 'stopped by SIGTERM after epoch 2, step [0-9]*; checkpoint written to .*; continue with the same flags and --resume' \
  "$dir/run.err" || fail "SIGTERM: no message: $(tail -n 2 "$dir/run.err")"
"$lenet" "${flags[@]}" --checkpoint_dir="$dir/ckpt" --resume \
  --params_out="$dir/resumed.bin" >"$dir/resumed.txt" 2>/dev/null ||
  fail "SIGTERM: the resumed run failed"
cmp "$dir/straight.bin" "$dir/resumed.bin" ||
  fail "SIGTERM: the resumed run differs from the uninterrupted one"
grep -qE "^resumed from .*lenet_scratch.ckpt at epoch 2, step [1-9][0-9]* " \
  "$dir/resumed.txt" || fail "SIGTERM: no resumed-from line"
echo "PASS: $(tail -n 1 "$dir/run.err")"

# 3b. What batch systems send before a job's time ends (SIGUSR1, SIGUSR2)
#     and a closed terminal (SIGHUP) also stop with a checkpoint.
for signal in USR1 HUP; do
  rm -rf "$dir/ckpt_$signal"
  "$lenet" "${flags[@]}" --checkpoint_dir="$dir/ckpt_$signal" \
    >/dev/null 2>"$dir/$signal.err" &
  pid=$!
  for _ in $(seq 3000); do
    grep -q '^epoch 1/3 \[#' "$dir/$signal.err" && break
    sleep 0.1
  done
  kill "-$signal" "$pid"
  status=0
  wait "$pid" || status=$?
  ((status == 128 + $(kill -l "$signal"))) ||
    fail "SIG$signal: exit $status; $(tail -n 2 "$dir/$signal.err")"
  grep -q "stopped by SIG$signal after epoch 1, step [0-9]*; checkpoint written to" \
    "$dir/$signal.err" || fail "SIG$signal: no message"
  [[ -s "$dir/ckpt_$signal/lenet_scratch.ckpt" ]] || fail "SIG$signal: no checkpoint"
done
echo "PASS: SIGUSR1 and SIGHUP stop with a checkpoint"

# 4. Another device count: one step per epoch (--limit = --batch_size), so
# epoch 2 is the next step after the checkpoint.
dir="$out/devices"
mkdir -p "$dir"
flags=(--limit=256 --batch_size=256 --test_limit=100 --lr=0.9 --seed=5)
"$lenet" --devices=cpu:2 "${flags[@]}" --epochs=2 \
  --params_out="$dir/straight.bin" >/dev/null 2>&1
"$lenet" --devices=cpu:2 "${flags[@]}" --epochs=1 \
  --checkpoint_dir="$dir/ckpt" >/dev/null 2>&1
for devices in 1 4; do
  cp -r "$dir/ckpt" "$dir/ckpt$devices"
  "$lenet" --devices=cpu:$devices "${flags[@]}" --epochs=2 \
    --checkpoint_dir="$dir/ckpt$devices" --resume \
    --params_out="$dir/on$devices.bin" >/dev/null 2>&1 ||
    fail "resuming on $devices devices failed"
  close_params "$dir/straight.bin" "$dir/on$devices.bin" 1e-6 ||
    fail "resumed on $devices devices: the step differs by more than 1e-6"
done
echo "PASS: a checkpoint of 2 devices resumes on 1 and 4"

# 4b. Left out, --batch_size and --lr are the checkpoint's on another device
# count (resnet_dp's defaults scale with the devices: 512 and 0.2 on two),
# and the resumed run says where it resumed from.
dir="$out/defaults"
mkdir -p "$dir"
flags=(--limit=512 --test_limit=16 --seed=6)
"$resnet" --devices=cpu:2 "${flags[@]}" --epochs=1 \
  --checkpoint_dir="$dir/ckpt" >"$dir/first.txt" 2>&1 ||
  fail "resnet_dp on 2 devices failed: $(tail -n 2 "$dir/first.txt")"
grep -q 'batch 512 (256 per device, scaled for 2 devices), lr 0.2 (scaled for 2 devices)' \
  "$dir/first.txt" || fail "the header does not say how batch and lr were scaled: $(head -n 1 "$dir/first.txt")"
"$resnet" --devices=cpu:1 "${flags[@]}" --epochs=2 --checkpoint_dir="$dir/ckpt" \
  --resume >"$dir/resumed.txt" 2>&1 ||
  fail "resuming resnet_dp on 1 device without --batch_size: $(tail -n 2 "$dir/resumed.txt")"
grep -q "batch 512 (the checkpoint's), lr 0.2 (the checkpoint's)" \
  "$dir/resumed.txt" || fail "the resumed header: $(grep batch "$dir/resumed.txt")"
grep -qE "^resumed from $dir/ckpt/resnet_dp.ckpt at epoch 2, step 0 \(written [0-9T:-]+Z on \[cpu:0, cpu:1\]\)$" \
  "$dir/resumed.txt" || fail "no resumed-from line: $(head -n 3 "$dir/resumed.txt")"
echo "PASS: resnet_dp resumed on 1 device with the checkpoint's batch and lr"

# 5. What must be refused.
expect_refusal() {
  local want="$1"
  shift
  local err
  err="$(timeout 60 "$@" 2>&1 >/dev/null)" && fail "accepted: $*"
  [[ "$err" == *"$want"* ]] || fail "message lacks '$want': $err"
}
ckpt="$out/lenet_scratch/ckpt"
lenet_flags=(--devices=cpu:2 --test_limit=200 --seed=3 --epochs=6)
expect_refusal "was written with training_data 2000 images" \
  "$lenet" "${lenet_flags[@]}" --lr=0.9 --limit=1000 \
  --checkpoint_dir="$ckpt" --resume
expect_refusal "was written with lr 0.9, this run has 0.5" \
  "$lenet" "${lenet_flags[@]}" --lr=0.5 --limit=2000 \
  --checkpoint_dir="$ckpt" --resume
mkdir -p "$out/foreign"
cp "$ckpt/lenet_scratch.ckpt" "$out/foreign/resnet_dp.ckpt"
expect_refusal "was written with program lenet_scratch, this run has resnet_dp" \
  "$resnet" --devices=cpu:1 --limit=64 --checkpoint_dir="$out/foreign" --resume
python3 - "$ckpt/lenet_scratch.ckpt" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[len(data) // 2] ^= 0x01
open(path, "wb").write(data)
PY
expect_refusal "lenet_scratch.ckpt is corrupt (its checksum does not match" \
  "$lenet" "${lenet_flags[@]}" --lr=0.9 --limit=2000 \
  --checkpoint_dir="$ckpt" --resume
echo "PASS"
