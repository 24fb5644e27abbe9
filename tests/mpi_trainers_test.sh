#!/usr/bin/env bash
# The trainers under mpirun (openmpi-bin), on the installed Fashion-MNIST:
#  1. lenet_scratch, 2 processes with one CPU device each, one epoch on a
#     subset, ends with the parameters of the single-process run on 2 CPU
#     devices (within 1e-6 relative), for the ring and mpi backends; only
#     process 0 prints the setup, epoch and closing lines;
#  2. 2 processes with 2 devices each equal one process with 4;
#  3. resnet_dp with --sync_bn runs under mpirun and writes its metrics;
#  4. an error on one process is printed with its process number and ends
#     the whole job, non-zero;
#  5. a process killed mid-run ends the job non-zero within the timeout,
#     with a message naming the lost rank, and leaves no process behind;
#  6. preemption: SIGTERM to every process (as Slurm sends it), or to one,
#     mid-epoch, stops the job after one agreed step with one checkpoint
#     and one line, exit 143; --resume ends bit for bit where the
#     uninterrupted run does.
# Args: the lenet_scratch and resnet_dp binaries. RINGLET_MPIRUN_FLAGS adds
# mpirun flags: "--mca btl tcp,self" (no shared memory) takes the path two
# hosts would, and the results must not change by a bit.
set -euo pipefail

lenet="$(realpath "$1")"
resnet="$(realpath "$2")"
out="${TEST_TMPDIR:-/tmp}"
export HOME="$out" # OpenMPI wants a home folder; Bazel's sandbox has none.
unset XML_OUTPUT_FILE TEST_PREMATURE_EXIT_FILE

# Under --config=asan, OpenMPI's own allocations (in plugins it unloads at
# MPI_Finalize, so LeakSanitizer sees "<unknown module>" frames no
# suppression can name) fail every process: no leak check in the processes
# mpirun starts. ASan's other checks stay on; leaks in ringlet's code are
# caught by the tests that run without mpirun.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fail() {
  echo "FAIL: $*"
  exit 1
}

command -v mpirun >/dev/null || fail "mpirun not found: install openmpi-bin (./bazelw does)"
read -ra extra <<<"${RINGLET_MPIRUN_FLAGS:-}"
mpi=(mpirun --oversubscribe --bind-to none "${extra[@]}")
echo "mpirun flags: ${mpi[*]:1}"
if ((EUID == 0)); then mpi+=(--allow-run-as-root); fi

# same_params <a> <b>: every float32 equal, bit for bit (2 ranks sum in
# either order exactly; more ranks sum in the ring's rank order wherever
# they run).
same_params() {
  python3 - "$1" "$2" <<'PY'
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
if len(a) != len(b) or not a:
    sys.exit(f"sizes differ: {len(a)} and {len(b)} values")
differ = sum(1 for x, y in zip(a.tobytes(), b.tobytes()) if x != y)
worst = max(abs(x - y) / max(abs(x), 1e-7) for x, y in zip(a, b))
print(f"{len(a)} parameters, {differ} bytes differ, "
      f"largest relative difference {worst:.3g}")
sys.exit(0 if differ == 0 else 1)
PY
}

common=(--epochs=1 --limit=3000 --test_limit=500 --lr=0.9 --seed=7)

# 1. Two processes of one device equal one process of two devices.
"$lenet" --devices=cpu:2 "${common[@]}" --params_out="$out/one.bin" \
  >"$out/one.txt" 2>/dev/null
for backend in ring mpi; do
  "${mpi[@]}" -np 2 "$lenet" --devices=cpu:1 --backend="$backend" \
    "${common[@]}" --params_out="$out/$backend.bin" \
    --metrics_out="$out/$backend.jsonl" >"$out/$backend.txt" 2>/dev/null ||
    fail "lenet_scratch under mpirun, backend $backend, failed"
  cat "$out/$backend.txt"
  same_params "$out/one.bin" "$out/$backend.bin" ||
    fail "backend $backend: parameters differ from the single-process run"
  [[ "$(grep -c '^lenet_scratch on 2 processes x \[cpu:0\] (mpirun)' "$out/$backend.txt")" -eq 1 ]] ||
    fail "expected one setup line, from process 0 only"
  [[ "$(grep -c '^epoch 1/1:' "$out/$backend.txt")" -eq 1 ]] ||
    fail "expected one epoch line, from process 0 only"
  [[ "$(grep -c "^{\"epoch\"" "$out/$backend.jsonl")" -eq 1 ]] ||
    fail "expected one metrics line"
done
# The same loss as the single-process run, to the last digit printed.
grep '^epoch 1/1:' "$out/one.txt" | sed 's/, [0-9.]* s,.*//' >"$out/one.loss"
grep '^epoch 1/1:' "$out/ring.txt" | sed 's/, [0-9.]* s,.*//' >"$out/ring.loss"
cmp -s "$out/one.loss" "$out/ring.loss" || fail "epoch lines differ: $(cat "$out/one.loss") vs $(cat "$out/ring.loss")"

# 2. Two processes of two devices equal one process of four.
"$lenet" --devices=cpu:4 "${common[@]}" --params_out="$out/four.bin" \
  >/dev/null 2>&1
"${mpi[@]}" -np 2 "$lenet" --devices=cpu:2 "${common[@]}" \
  --params_out="$out/two_by_two.bin" >/dev/null 2>&1 ||
  fail "lenet_scratch under mpirun with 2 devices per process failed"
same_params "$out/four.bin" "$out/two_by_two.bin" ||
  fail "2 processes x 2 devices differ from 1 process x 4 devices"

# 2b. Processes with different device counts: the header names each
# one's devices (it once showed process 0's for all).
"${mpi[@]}" -np 1 "$lenet" --devices=cpu:1 --epochs=1 --limit=512 \
  --test_limit=64 : -np 1 "$lenet" --devices=cpu:2 --epochs=1 --limit=512 \
  --test_limit=64 >"$out/uneven.txt" 2>/dev/null ||
  fail "processes with 1 and 2 devices failed"
grep -q '^lenet_scratch on 2 processes: \[cpu:0\] + \[cpu:0, cpu:1\] (mpirun): backend ring, batch 256 (85-86 per device)' \
  "$out/uneven.txt" || fail "the header does not name each process's devices: $(head -n 1 "$out/uneven.txt")"

# 3. resnet_dp with synchronised batch norm across processes.
"${mpi[@]}" -np 2 "$resnet" --devices=cpu:1 --sync_bn --epochs=1 \
  --limit=64 --test_limit=32 --batch_size=32 \
  --metrics_out="$out/resnet.jsonl" >"$out/resnet.txt" 2>/dev/null ||
  fail "resnet_dp under mpirun failed"
cat "$out/resnet.txt"
[[ "$(grep -c "^{\"epoch\"" "$out/resnet.jsonl")" -eq 1 ]] || fail "resnet_dp: no metrics"

# 4. A missing data set on process 1 only: its error names it, and the
# whole job ends non-zero (process 0 is not left waiting).
status=0
timeout 120 "${mpi[@]}" -np 1 "$lenet" --devices=cpu:1 "${common[@]}" : \
  -np 1 "$lenet" --devices=cpu:1 "${common[@]}" --data_dir="$out/nowhere" \
  >"$out/error.txt" 2>&1 || status=$?
cat "$out/error.txt"
((status != 0 && status != 124)) || fail "expected a non-zero exit before the time limit, got $status"
grep -q 'lenet_scratch: error on process 1 of 2 (host .*): .*nowhere' \
  "$out/error.txt" || fail "the error does not name process 1"

# 4b. Processes launched with different settings: every disagreement is
# named with both values at once (a different --lr once finished with a
# wrong model, a different --epochs once hung until the 60 s timeout, a
# different --backend once ended in "internal error").
expect_disagreement() {
  local want="$1"
  shift
  local status=0 start=$SECONDS
  timeout 120 "${mpi[@]}" -np 1 "$lenet" --devices=cpu:1 "${common[@]}" : \
    -np 1 "$lenet" --devices=cpu:1 "${common[@]}" "$@" \
    >"$out/disagree.txt" 2>&1 || status=$?
  ((status != 0 && status != 124)) ||
    fail "$*: expected a non-zero exit before the time limit, got $status"
  grep -q "error on process [01] of 2 (host .*): processes disagree on $want" \
    "$out/disagree.txt" || fail "$*: no message naming $want: $(cat "$out/disagree.txt")"
  ((SECONDS - start < 90)) || fail "$*: took $((SECONDS - start)) s"
  grep -q '^epoch 1/1:' "$out/disagree.txt" && fail "$*: trained anyway"
  echo "disagreement named: $(grep -m1 -o 'processes disagree on [^;]*' "$out/disagree.txt")"
}
expect_disagreement "lr: 0.9 on process 0, 5 on process 1" --lr=5
expect_disagreement "seed: 7 on process 0, 8 on process 1" --seed=8
expect_disagreement "epochs: 1 on process 0, 2 on process 1" --epochs=2
expect_disagreement "backend: ring on process 0, naive on process 1" \
  --backend=naive
expect_disagreement "training_data: 3000 images, fingerprint [0-9a-f]* on process 0, 2999 images" \
  --limit=2999
# Collectives only some processes would call: an evaluation every step,
# the stop agreed after each step.
expect_disagreement "eval_every: 0 on process 0, 1 on process 1" --eval_every=1
expect_disagreement "stop_on_signal: false on process 0, true on process 1" \
  --checkpoint_dir="$out/one_side"

# 5. Process 1 killed after the first epoch.
"${mpi[@]}" -np 2 "$lenet" --devices=cpu:1 --epochs=1000 --limit=2048 \
  --test_limit=100 --metrics_out="$out/killed.jsonl" >"$out/killed.txt" 2>&1 &
job=$!
# Up to 5 minutes: other large tests may share the cores. The metrics file
# (rank 0 writes it itself) says when an epoch ended: mpirun relays the
# ranks' stdout and stderr in chunks that may split a printed line.
for _ in $(seq 3000); do
  grep -q '^{"epoch"' "$out/killed.jsonl" 2>/dev/null && break
  sleep 0.1
done
if ! grep -q '^{"epoch"' "$out/killed.jsonl" 2>/dev/null; then
  kill -TERM "$job" 2>/dev/null || true  # mpirun ends its ranks too.
  fail "the job never finished an epoch: $(tail -n 20 "$out/killed.txt")"
fi
victim=""
ranks=$(pgrep -P "$job")
for pid in $ranks; do
  if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
    victim="$pid"
  fi
done
[[ -n "$victim" ]] || fail "cannot find the process of rank 1"
start=$SECONDS
kill -KILL "$victim"
status=0
wait "$job" || status=$?
elapsed=$((SECONDS - start))
cat "$out/killed.txt" | tail -n 15
((status != 0)) || fail "the job ended with status 0 after losing a process"
echo "the job ended ${elapsed}s after the kill"
((elapsed <= 60)) || fail "the job took ${elapsed}s to end after losing a process"
grep -qiE 'rank 1 .*(killed|signal)|process rank 1' "$out/killed.txt" ||
  fail "no message names the lost rank 1"
# This job's own ranks, by pid: the TCP variant of this test may run the
# same command line beside it. A rank may take a moment to be reaped.
for _ in $(seq 50); do
  alive=""
  for pid in $ranks; do
    kill -0 "$pid" 2>/dev/null && alive="$alive $pid"
  done
  [[ -z "$alive" ]] && break
  sleep 0.1
done
[[ -z "$alive" ]] || fail "a process of the killed job is still running:$alive"
# 6. Preemption. ranks_of <mpirun pid>: its rank processes, rank order.
ranks_of() {
  local pid rank
  for pid in $(pgrep -P "$1"); do
    rank="$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
      sed -n 's/^OMPI_COMM_WORLD_RANK=//p')"
    [[ -n "$rank" ]] && echo "$rank $pid"
  done | sort -n | cut -d' ' -f2
}
preempt=(--devices=cpu:1 --epochs=3 --limit=20000 --test_limit=200 --seed=5)
"${mpi[@]}" -np 2 "$lenet" "${preempt[@]}" --params_out="$out/straight.bin" \
  >/dev/null 2>&1 || fail "the uninterrupted run failed"
# stop_and_resume <name> <which ranks: all or 1> <signal>
stop_and_resume() {
  local name="$1" which="$2" signal="$3" dir="$out/preempt_$1"
  rm -rf "$dir"
  # stdout and stderr apart: mpirun relays each in chunks, and one file
  # for both may split a line of one with the other's.
  "${mpi[@]}" -np 2 "$lenet" "${preempt[@]}" --checkpoint_dir="$dir" \
    >"$out/$name.txt" 2>"$out/$name.err" &
  local job=$! status=0 _ pids
  # Mid-epoch 1: a progress line with images done (the handlers are set).
  for _ in $(seq 3000); do
    grep -qE 'epoch 1/3 \[[#.]*\] [1-9]' "$out/$name.err" && break
    sleep 0.1
  done
  mapfile -t pids < <(ranks_of "$job")
  ((${#pids[@]} == 2)) || fail "$name: cannot find the two ranks"
  if [[ "$which" == all ]]; then
    kill "-$signal" "${pids[@]}"
  else
    kill "-$signal" "${pids[1]}"
  fi
  wait "$job" || status=$?
  cat "$out/$name.txt"
  grep -v '\] ' "$out/$name.err" | head -n 12
  ((status == 128 + $(kill -l "$signal"))) ||
    fail "$name: exit status $status, not 128 + SIG$signal"
  [[ "$(grep -c "stopped by SIG$signal after epoch [0-9]*, step [0-9]*; checkpoint written to $dir/lenet_scratch.ckpt" "$out/$name.err")" == 1 ]] ||
    fail "$name: not one 'stopped by SIG$signal' line"
  "${mpi[@]}" -np 2 "$lenet" "${preempt[@]}" --checkpoint_dir="$dir" \
    --resume --params_out="$out/$name.bin" >"$out/$name.resumed.txt" \
    2>"$out/$name.resumed.err" ||
    fail "$name: the resumed run failed: $(tail -n 5 "$out/$name.resumed.err")"
  grep -q "resumed from $dir/lenet_scratch.ckpt at epoch " \
    "$out/$name.resumed.txt" ||
    fail "$name: no 'resumed from' line: $(cat "$out/$name.resumed.txt")"
  same_params "$out/straight.bin" "$out/$name.bin" ||
    fail "$name: the resumed run ends elsewhere than the uninterrupted one"
}
stop_and_resume every_rank all TERM
stop_and_resume one_rank 1 INT

echo "PASS"
