#!/usr/bin/env bash
# Memory running out is an error a user can act on, never an abort: under
# an address-space limit (ulimit -v, the CPU's stand-in for a full GPU) a
# batch that cannot fit makes each binary print one line naming the
# memory asked for, held and free, and what would fit, then exit 1. A
# checkpoint written before stays as it was. Without ulimit -v Linux
# overcommits and its OOM killer ended the process (exit 137, nothing
# printed): a host that reports less memory (a MemAvailable and a cgroup
# limit the test writes, nn/host_memory.h) gives the same one line.
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
  if [[ "${memory_from:-ulimit}" == ulimit ]]; then
    (ulimit -v "$limit_kib" && exec "$@") >"$out/$name.out" \
      2>"$out/$name.err" || code=$?
  else
    "$@" >"$out/$name.out" 2>"$out/$name.err" || code=$?
  fi
  cat "$out/$name.err"
  ((code == 1)) || fail "$name exited $code, expected 1"
  local errors
  errors="$(grep -c ': error: ' "$out/$name.err" || true)"
  ((errors == 1)) || fail "$name printed $errors error lines, expected 1"
  grep -q 'the host is out of memory: asked for [0-9.]* [KMG]iB with .* free of' \
    "$out/$name.err" || fail "$name: no shortage in the message"
  grep -q "${limit_named:-limited to 2.86 GiB by ulimit -v}" "$out/$name.err" ||
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

# 5. No ulimit. First a host that reports 600 MiB available of 4 GiB and
#    a cgroup limit of 1.5 GiB below a machine's 64 GiB (files the test
#    writes): the first allocation past them is refused.
memory_from=host
export RINGLET_MEMINFO="$out/meminfo" RINGLET_MEMORY_CGROUP="$out/cgroup"
mkdir -p "$RINGLET_MEMORY_CGROUP"
printf 'MemTotal: 4194304 kB\nMemAvailable: 614400 kB\n' >"$RINGLET_MEMINFO"
limit_named="with [0-9.]* MiB free of 4.00 GiB"
expect_out_of_memory resnet_dp_host "$resnet" --devices=cpu:1 --epochs=1 \
  --batch_size=4000 --limit=4000 --test_limit=32
grep -q 'a batch of 4000 (4000 per device) did not fit' \
  "$out/resnet_dp_host.err" || fail "resnet_dp: no advice"
expect_out_of_memory train_bench_host "$bench" --model=resnet18 \
  --batch_size=4000 --steps=1 --warmup=0
printf 'MemTotal: 67108864 kB\nMemAvailable: 62914560 kB\n' >"$RINGLET_MEMINFO"
echo 1610612736 >"$RINGLET_MEMORY_CGROUP/memory.max"
echo 104857600 >"$RINGLET_MEMORY_CGROUP/memory.current"
limit_named="(the memory cgroup's limit of 1.50 GiB ($RINGLET_MEMORY_CGROUP/memory.max))"
expect_out_of_memory lenet_scratch_cgroup "$lenet" --devices=cpu:1 \
  --epochs=1 --batch_size=60000 --test_limit=32
unset RINGLET_MEMINFO RINGLET_MEMORY_CGROUP

# 6. A real memory cgroup of 2 GiB, where this machine lets the test make
#    one (root, cgroup v1 or v2): the kernel counts the pages as they are
#    touched, and the run ends in the one line, not exit 137.
group=""
for base in /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup; do
  [[ -w "$base/cgroup.procs" ]] || continue
  candidate="$base/ringlet_limits_e2e_$$"
  mkdir "$candidate" 2>/dev/null || continue
  if [[ -e "$candidate/memory.max" ]]; then
    echo $((2 << 30)) >"$candidate/memory.max" 2>/dev/null && group="$candidate"
  else
    echo $((2 << 30)) >"$candidate/memory.limit_in_bytes" 2>/dev/null &&
      group="$candidate"
  fi
  [[ -n "$group" ]] && break
  rmdir "$candidate" 2>/dev/null || true
done
if [[ -n "$group" ]]; then
  in_group() { (echo "$BASHPID" >"$group/cgroup.procs" && exec "$@"); }
  limit_named="(the memory cgroup's limit of 2.00 GiB ($group/memory."
  expect_out_of_memory resnet_dp_cgroup in_group "$resnet" --devices=cpu:1 \
    --epochs=1 --batch_size=4000 --limit=4000 --test_limit=32
  # Many replicas allocating at once (about 0.2 GiB each), once killed.
  expect_out_of_memory resnet_dp_replicas in_group "$resnet" \
    --devices=cpu:64 --epochs=1 --limit=512 --test_limit=32
  grep -q 'did not fit before training began: use fewer --devices' \
    "$out/resnet_dp_replicas.err" || fail "resnet_dp --devices=cpu:64: no advice"
  rmdir "$group" 2>/dev/null || true
else
  echo "SKIP: no memory cgroup this test may make (needs root)"
fi

echo "PASS: out of memory is one line and exit 1 in every binary"
