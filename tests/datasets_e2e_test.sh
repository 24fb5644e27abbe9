#!/usr/bin/env bash
# The trainers on data sets of their own shapes, files the test writes:
#  1. resnet_dp on a CIFAR-10-format folder (binary batches of 3 x 32 x 32
#     images, each class its own colour), 2 CPU devices, 2 epochs of 256
#     images: ResNet-18 takes 3 channels and 10 classes, the loss falls;
#  2. resnet_dp on a folder of .npy files (float32 1 x 8 x 8 inputs, int64
#     class ids 0..2): 3 classes, it trains; the same arrays in an .npz
#     file numpy compressed, and in a .safetensors file, train the same;
#  3. lenet_scratch refuses CIFAR's images, naming the shape it takes;
#     --dataset=cifar10 without --data_dir says what to give;
#  4. --augment=crop,flip: the same parameters on 1 and 2 devices (with
#     --reproducible), and others than without it.
# Args: the lenet_scratch and resnet_dp binaries.
set -euo pipefail

lenet="$1"
resnet="$2"
out="${TEST_TMPDIR:-/tmp}"

fail() {
  echo "FAIL: $*"
  exit 1
}

/usr/bin/python3 - "$out" <<'PY'
import os, random, struct, sys
out = sys.argv[1]
rng = random.Random(5)

def record(label):
    # The class's colour in one channel, noise elsewhere.
    pixels = bytearray(rng.randrange(0, 64) for _ in range(3072))
    channel = label % 3
    level = 80 + 17 * label
    for p in range(1024):
        pixels[channel * 1024 + p] = min(255, level + rng.randrange(0, 16))
    return bytes([label]) + bytes(pixels)

cifar = os.path.join(out, "cifar")
os.makedirs(cifar, exist_ok=True)
for name, n in [("data_batch_%d.bin" % i, 60) for i in range(1, 6)] + \
               [("test_batch.bin", 100)]:
    with open(os.path.join(cifar, name), "wb") as f:
        for i in range(n):
            f.write(record(rng.randrange(10)))

def npy(path, descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d," % d for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode() + payload)

folder = os.path.join(out, "npy")
os.makedirs(folder, exist_ok=True)
for split, n in [("train", 96), ("test", 30)]:
    labels = [rng.randrange(3) for _ in range(n)]
    x = b"".join(struct.pack("<64f", *[float(l) + rng.random() for _ in range(64)])
                 for l in labels)
    npy(os.path.join(folder, split + "_inputs.npy"), "<f4", (n, 1, 8, 8), x)
    npy(os.path.join(folder, split + "_targets.npy"), "<i8", (n,),
        struct.pack("<%dq" % n, *labels))
PY

# field <json line> <key>: a number from one JSON line.
field() {
  sed -E "s/.*\"$2\":([-0-9.e+]+).*/\1/" <<<"$1"
}

# 1. CIFAR-10's format.
"$resnet" --dataset=cifar10 --data_dir="$out/cifar" --devices=cpu:2 \
  --epochs=2 --limit=256 --batch_size=64 --lr=0.05 \
  --metrics_out="$out/cifar.jsonl" >"$out/cifar.txt" 2>"$out/cifar.err" ||
  { cat "$out/cifar.err"; fail "resnet_dp on CIFAR-10's format"; }
cat "$out/cifar.txt"
grep -q "256 training and 100 test images (cifar10, uint8 {3, 32, 32})" \
  "$out/cifar.txt" || fail "the header does not name the data"
first="$(grep '^{"epoch":1' "$out/cifar.jsonl")"
second="$(grep '^{"epoch":2' "$out/cifar.jsonl")"
awk -v a="$(field "$first" loss)" -v b="$(field "$second" loss)" \
  'BEGIN { exit !(b < a) }' || fail "the loss did not fall: $first / $second"

# 2. .npy files of another shape and 3 classes.
"$resnet" --dataset=npy --data_dir="$out/npy" --devices=cpu:1 --epochs=1 \
  --batch_size=32 >"$out/npy.txt" 2>"$out/npy.err" ||
  { cat "$out/npy.err"; fail "resnet_dp on .npy files"; }
cat "$out/npy.txt"
grep -q "96 training and 30 test images (npy, float32 {1, 8, 8})" \
  "$out/npy.txt" || fail "the header does not name the npy data"
grep -q '^test acc: ' "$out/npy.txt" || fail "no closing line"
# The same arrays in one .npz file, as numpy writes it, compressed.
/usr/bin/python3 - "$out" <<'PY'
import sys
import numpy as np
d = sys.argv[1] + "/npy/"
np.savez_compressed(sys.argv[1] + "/data.npz", **{
    name: np.load(d + name + ".npy")
    for name in ["train_inputs", "train_targets", "test_inputs", "test_targets"]})
PY
"$resnet" --dataset=npy --data_dir="$out/data.npz" --devices=cpu:1 --epochs=1 \
  --batch_size=32 >"$out/npz.txt" 2>"$out/npz.err" ||
  { cat "$out/npz.err"; fail "resnet_dp on an .npz file"; }
[[ "$(grep '^epoch 1' "$out/npz.txt" | cut -d, -f1-3)" == \
   "$(grep '^epoch 1' "$out/npy.txt" | cut -d, -f1-3)" ]] ||
  fail "the .npz file trained otherwise than its .npy files"
# And in a .safetensors file, as the safetensors package writes it.
/usr/bin/python3 - "$out" <<'PY'
import sys
import numpy as np
from safetensors.numpy import save_file
d = sys.argv[1] + "/npy/"
save_file({name: np.load(d + name + ".npy") for name in
           ["train_inputs", "train_targets", "test_inputs", "test_targets"]},
          sys.argv[1] + "/data.safetensors")
PY
"$resnet" --dataset=safetensors --data_dir="$out/data.safetensors" \
  --devices=cpu:1 --epochs=1 --batch_size=32 >"$out/st.txt" 2>"$out/st.err" ||
  { cat "$out/st.err"; fail "resnet_dp on a .safetensors file"; }
[[ "$(grep '^epoch 1' "$out/st.txt" | cut -d, -f1-3)" == \
   "$(grep '^epoch 1' "$out/npy.txt" | cut -d, -f1-3)" ]] ||
  fail "the .safetensors file trained otherwise than its .npy files"

# 3. Refusals, one line each.
set +e
"$lenet" --dataset=cifar10 --data_dir="$out/cifar" --devices=cpu:1 \
  --epochs=1 >"$out/lenet.txt" 2>&1
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "lenet_scratch trained on 3 x 32 x 32 images"
grep -q "lenet_scratch takes images of {1, 28, 28} in 10 classes; --dataset=cifar10 holds uint8 {3, 32, 32}" \
  "$out/lenet.txt" || { cat "$out/lenet.txt"; fail "lenet's refusal"; }
set +e
"$resnet" --dataset=cifar10 --epochs=1 >"$out/nodir.txt" 2>&1
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "cifar10 without --data_dir ran"
grep -q "needs --data_dir" "$out/nodir.txt" || { cat "$out/nodir.txt"; fail "no advice"; }
# 4. Augmented batches do not depend on the devices.
for d in cpu:1 cpu:2 none; do
  aug=(--augment=crop,flip)
  [[ "$d" == none ]] && aug=()
  "$resnet" --dataset=cifar10 --data_dir="$out/cifar" --epochs=1 \
    --limit=64 --test_limit=10 --batch_size=32 --reproducible "${aug[@]}" \
    --devices="${d/none/cpu:1}" --params_out="$out/aug_$d.params" \
    >/dev/null 2>"$out/aug_$d.err" || { cat "$out/aug_$d.err"; fail "--augment on $d"; }
done
cmp -s "$out/aug_cpu:1.params" "$out/aug_cpu:2.params" ||
  fail "--augment gave other parameters on 2 devices than on 1"
! cmp -s "$out/aug_cpu:1.params" "$out/aug_none.params" ||
  fail "--augment changed nothing"
echo "PASS"
