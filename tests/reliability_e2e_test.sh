#!/usr/bin/env bash
# What a hostile probe of the data paths broke, run end to end: each case
# must end in one line and its documented exit code, nothing lost.
#  - a crop wider than the image (1x1 images): trains, exit 0;
#  - a .npy input cut short while it is read in place: exit 1, one line
#    naming the file, the checkpoint of the last finished step written;
#  - stdout a closed pipe (| head -1) or a full disk (/dev/full): exit 1,
#    one line, the checkpoint written;
#  - outputs over the run's own files (its lock, its data): exit 1 before
#    anything is written;
#  - empty sets, a NaN in the test images, a 0-d array: exit 1, one line;
#  - --reproducible resumed with other --threads_per_device: exit 1.
# Args: the lenet_scratch and resnet_dp binaries.
set -uo pipefail

lenet="$1"
resnet="$2"
tmp="${TEST_TMPDIR:-/tmp}/reliability"
rm -rf "$tmp"
mkdir -p "$tmp"
python=/usr/bin/python3
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect <name> <code> <pattern> <command...>: exit `code`, and stderr holds
# exactly one line matching `pattern` and no abort.
expect() {
  local name="$1" want="$2" pattern="$3"
  shift 3
  local code=0
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || code=$?
  ((code == want)) || fail "$name exited $code, expected $want: $(tail -2 "$tmp/$name.err")"
  local lines
  lines="$(grep -cE -- "$pattern" "$tmp/$name.err" || true)"
  ((lines == 1)) || fail "$name: $lines lines match '$pattern': $(tail -3 "$tmp/$name.err")"
  if grep -qE 'terminate called|core dumped|Sanitizer|free\(\)' "$tmp/$name.err"; then
    fail "$name aborted"
  fi
}

# Data sets written by numpy: 1x1 images; 20,000 Fashion-MNIST-shaped
# float images; empty sets; a NaN; a 0-d array.
"$python" - "$tmp" <<'PY' || fail "numpy could not write the data"
import os, sys
import numpy as np
root = sys.argv[1]
rng = np.random.default_rng(0)
def save(name, train_x, train_y, test_x, test_y):
    d = os.path.join(root, name)
    os.makedirs(d)
    for n, a in [("train_inputs", train_x), ("train_targets", train_y),
                 ("test_inputs", test_x), ("test_targets", test_y)]:
        np.save(os.path.join(d, n + ".npy"), a)
y = rng.integers(0, 10, 20000)
x = rng.random((20000, 1, 28, 28), dtype=np.float32)
save("tiny", rng.integers(0, 255, (96, 1, 1, 1), dtype=np.uint8), y[:96] % 3,
     rng.integers(0, 255, (32, 1, 1, 1), dtype=np.uint8), y[:32] % 3)
save("big", x, y, x[:500], y[:500])
save("empty_train", x[:0], y[:0], x[:64], y[:64])
save("empty_test", x[:64], y[:64], x[:0], y[:0])
nan = x[:64].copy()
nan[17, 0, 3, 4] = np.nan
save("nan_test", x[:64], y[:64], nan, y[:64])
save("scalar", np.float32(3), y[:64], x[:64], y[:64])
PY
small=(--devices=cpu:1 --epochs=1 --limit=1024 --test_limit=100)

# 1. A crop wider than the image: before, free(): invalid pointer (134).
code=0
"$resnet" --dataset=npy --data_dir="$tmp/tiny" --devices=cpu:1 --epochs=1 \
  --batch_size=32 --augment=crop >"$tmp/crop.out" 2>"$tmp/crop.err" || code=$?
((code == 0)) || fail "crop on 1x1 images: exit $code: $(tail -2 "$tmp/crop.err")"
grep -q '^test acc: ' "$tmp/crop.out" || fail "crop on 1x1 images: no closing line"

# 2. The input cut short while it is read in place: before, terminate
#    called (134), no checkpoint.
cp -r "$tmp/big" "$tmp/cut"
"$lenet" --dataset=npy --data_dir="$tmp/cut" --devices=cpu:1 --epochs=6 \
  --checkpoint_dir="$tmp/cut_ck" >"$tmp/cut.out" 2>"$tmp/cut.err" &
pid=$!
# Cut once training reads it (its first progress line).
for _ in $(seq 600); do
  grep -q 'epoch 1/6' "$tmp/cut.err" 2>/dev/null && break
  sleep 0.1
done
truncate -s 30000000 "$tmp/cut/train_inputs.npy"
code=0
wait "$pid" || code=$?
((code == 1)) || fail "cut: exited $code, expected 1: $(tail -2 "$tmp/cut.err")"
grep -q ': error: .*train_inputs.npy: cannot read .*(the file is shorter than it was); checkpoint written to .*lenet_scratch.ckpt at epoch [0-9]*, step [0-9]*: restore the data' \
  "$tmp/cut.err" || fail "cut: $(tail -2 "$tmp/cut.err")"
[[ -s "$tmp/cut_ck/lenet_scratch.ckpt" ]] || fail "cut: no checkpoint"

# 3. A closed stdout: before, killed by SIGPIPE (141) with no line; a full
#    disk: before, exit 0 with every line lost.
"$lenet" "${small[@]}" --epochs=2 --checkpoint_dir="$tmp/pipe_ck" \
  2>"$tmp/pipe.err" | head -1 >/dev/null
code="${PIPESTATUS[0]}"
((code == 1)) || fail "| head -1: exited $code, expected 1"
[[ "$(grep -c 'error: standard output could not be written (Broken pipe' "$tmp/pipe.err")" == 1 ]] ||
  fail "| head -1: $(tail -2 "$tmp/pipe.err")"
grep -q 'checkpoint written to' "$tmp/pipe.err" || fail "| head -1: no checkpoint"
[[ -s "$tmp/pipe_ck/lenet_scratch.ckpt" ]] || fail "| head -1: no checkpoint file"
code=0
"$lenet" "${small[@]}" >/dev/full 2>"$tmp/full.err" || code=$?
((code == 1)) || fail "/dev/full: exited $code, expected 1"
grep -q 'error: standard output could not be written (No space left on device' \
  "$tmp/full.err" || fail "/dev/full: $(tail -2 "$tmp/full.err")"

# 4. Outputs over the run's own files: before, the lock replaced (a second
#    run let in), the training data replaced with JSON, exit 0.
mkdir -p "$tmp/lock_ck"
expect lock 1 'error: --metrics_out: .*lenet_scratch.lock is the lock of --checkpoint_dir' \
  "$lenet" "${small[@]}" --checkpoint_dir="$tmp/lock_ck" \
  --metrics_out="$tmp/lock_ck/lenet_scratch.lock"
before="$(md5sum <"$tmp/tiny/train_inputs.npy")"
expect data_out 1 'error: --metrics_out: .*train_inputs.npy is a file of the data set' \
  "$resnet" --dataset=npy --data_dir="$tmp/tiny" --devices=cpu:1 --epochs=1 \
  --metrics_out="$tmp/tiny/./train_inputs.npy"
[[ "$(md5sum <"$tmp/tiny/train_inputs.npy")" == "$before" ]] ||
  fail "the training data changed"

# 5. Data that would score as results: before, exit 0 with "loss 0.000" or
#    "test acc: 0.00", a NaN scored as an image, and a 0-d array read as
#    "cannot create std::vector larger than max_size()".
expect empty_train 1 'error: --dataset=npy: the training set holds no samples' \
  "$lenet" --dataset=npy --data_dir="$tmp/empty_train" --devices=cpu:1 --epochs=1
expect empty_test 1 'error: --dataset=npy: the test set holds no samples' \
  "$lenet" --dataset=npy --data_dir="$tmp/empty_test" --devices=cpu:1 --epochs=1
expect nan_test 1 "error: .*test_inputs.npy: sample 17's input holds nan" \
  "$lenet" --dataset=npy --data_dir="$tmp/nan_test" --devices=cpu:1 --epochs=1
expect scalar 1 'error: .*train_inputs.npy holds a 0-d array' \
  "$lenet" --dataset=npy --data_dir="$tmp/scalar" --devices=cpu:1 --epochs=1

# 6. --reproducible resumed with other op threads: before, other parameters
#    with no word.
"$lenet" "${small[@]}" --limit=512 --reproducible --checkpoint_dir="$tmp/repro_ck" \
  >/dev/null 2>&1 || fail "the reproducible run failed"
expect repro_threads 1 'was written with threads_per_device 1, this run has 2' \
  "$lenet" "${small[@]}" --limit=512 --epochs=2 --reproducible \
  --threads_per_device=2 --checkpoint_dir="$tmp/repro_ck" --resume

echo "$failures failure(s)"
exit $((failures > 0))
