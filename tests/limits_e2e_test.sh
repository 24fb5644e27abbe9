#!/usr/bin/env bash
# Memory running out is an error a user can act on, never an abort: under
# an address-space limit (ulimit -v, the CPU's stand-in for a full GPU) a
# batch that cannot fit makes each binary print one line naming the
# memory asked for, held and free, and what would fit, then exit 1. A
# checkpoint written before stays as it was.
# Args: the lenet_scratch, resnet_dp and train_bench binaries.
set -euo pipefail

lenet="$1"
resnet="$2"
bench="$3"
out="${TEST_TMPDIR:-/tmp}"
limit_kib=3000000  # 2.86 GiB: each binary starts in about 0.4 GiB.

fail() {
  echo "FAIL: $*"
  exit 1
}

# expect_out_of_memory <name> <command...>: exit 1, one error line about
# memory, no abort.
expect_out_of_memory() {
  local name="$1"
  shift
  local code=0
  (ulimit -v "$limit_kib" && exec "$@") >"$out/$name.out" 2>"$out/$name.err" ||
    code=$?
  cat "$out/$name.err"
  ((code == 1)) || fail "$name exited $code, expected 1"
  local errors
  errors="$(grep -c ': error: ' "$out/$name.err" || true)"
  ((errors == 1)) || fail "$name printed $errors error lines, expected 1"
  grep -q 'the host is out of memory: asked for [0-9.]* [KMG]iB with .* free of' \
    "$out/$name.err" || fail "$name: no shortage in the message"
  grep -q 'limited to 2.86 GiB by ulimit -v' "$out/$name.err" ||
    fail "$name: the limit is not named"
  # The abort's own words (glibc, libstdc++, the shell, the sanitizers), not
  # an error message that names an aborted collective.
  if grep -qE 'corrupted|terminate called|core dumped|Sanitizer' "$out/$name.err"; then
    fail "$name aborted"
  fi
}

# 1. resnet_dp: a checkpoint from a small run, then a batch of 4000 (about
#    5 GiB of activations) in the same folder.
"$resnet" --devices=cpu:1 --epochs=1 --batch_size=32 --limit=64 \
  --test_limit=32 --checkpoint_dir="$out/ckpt" >/dev/null 2>&1
before="$(md5sum <"$out/ckpt/resnet_dp.ckpt")"
expect_out_of_memory resnet_dp "$resnet" --devices=cpu:1 --epochs=1 \
  --batch_size=4000 --limit=4000 --test_limit=32 --checkpoint_dir="$out/ckpt"
grep -q 'a batch of 4000 (4000 per device) did not fit.*use a smaller --batch_size, or more devices' \
  "$out/resnet_dp.err" || fail "resnet_dp: no advice"
[[ "$(md5sum <"$out/ckpt/resnet_dp.ckpt")" == "$before" ]] ||
  fail "the checkpoint changed"

# 2. On two CPU devices the cause, not the other device's aborted
#    collective, is what the user reads.
expect_out_of_memory resnet_dp_2 "$resnet" --devices=cpu:2 --epochs=1 \
  --batch_size=8000 --limit=8000 --test_limit=32
grep -q '(4000 per device)' "$out/resnet_dp_2.err" ||
  fail "resnet_dp on 2 devices: no per-device batch"

# 3. lenet_scratch: the whole training set as one batch (LeNet's first
#    layer alone: 1.1 GiB at 60000).
expect_out_of_memory lenet_scratch "$lenet" --devices=cpu:1 --epochs=1 \
  --batch_size=60000 --test_limit=32

# 4. train_bench, a benchmark: the same line, not std::terminate.
expect_out_of_memory train_bench "$bench" --model=resnet18 --batch_size=4000 \
  --steps=1 --warmup=0

echo "PASS: out of memory is one line and exit 1 in every binary"
