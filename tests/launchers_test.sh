#!/usr/bin/env bash
# The trainers launched as PyTorch's DDP is, without MPI: ringlet's own TCP
# transport, the rendezvous at MASTER_ADDR:MASTER_PORT (process 0).
#  1. torchrun --nproc_per_node=2 --no_python: lenet_scratch
#     on one CPU device per process ends with the parameters of one
#     process on 2 devices, bit for bit (2 ranks sum in either order
#     exactly); only process 0 prints; the header says "(torchrun)";
#  2. resnet_dp with --sync_bn under torchrun writes its metrics;
#  3. processes started by hand with srun's environment (SLURM_PROCID,
#     SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_STEP_NODELIST) as srun
#     sets it, 2 devices each: the parameters of one process on 4;
#  4. a process killed mid-run (SIGKILL): the other ends within seconds,
#     exit 1, with one line naming the lost process, never waiting for a
#     timeout; and under torchrun the job ends non-zero, nothing left
#     running;
#  4b. a process stopped mid-run (SIGSTOP): the other ends within the
#     heartbeat timeout (0.8 s), exit 1, naming it as stopped;
#  5. a process launched for a job of another size: every process that
#     came says so and exits 1;
#  6. torchrun --max_restarts=2 with --checkpoint_steps: a worker killed
#     (SIGKILL) mid-epoch, torchrun restarts the job, which resumes on its
#     own from the last checkpoint (mid-epoch, a line and a {"restart"}
#     record saying so) and ends with the uninterrupted run's parameters,
#     bit for bit (--reproducible): lenet_scratch, then resnet_dp;
#  6b. two torchrun agents (--nnodes=1:2, one "node" each) and one of them
#     lost with its worker (SIGKILL, not the one hosting torchrun's
#     rendezvous): the other re-forms the job alone, resumes the 2-process
#     checkpoint on 1 process, and ends with the uninterrupted run's
#     parameters, bit for bit;
#  7. examples/mlp (a user's own program, JoinLaunchedJob) under torchrun:
#     2 processes of one device save the parameters of 1 process of 2.
# Args: the lenet_scratch, resnet_dp and train_mlp binaries. Needs torchrun
# (python3-torch, which ./bazelw installs).
set -euo pipefail

lenet="$(realpath "$1")"
resnet="$(realpath "$2")"
mlp="$(realpath "$3")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${TEST_TMPDIR:-$(mktemp -d)}"
unset XML_OUTPUT_FILE TEST_PREMATURE_EXIT_FILE
fail() {
  echo "FAIL: $*"
  exit 1
}
command -v torchrun >/dev/null ||
  fail "torchrun not found: install python3-torch (./bazelw does)"
# torchrun 1.13 on Python 3.11 fails at start unless --redirects and --tee
# name one stream each (an IntFlag change in 3.11: 3, both, fails too); 2
# keeps stderr in torchrun's log folder and on the terminal, prefixed with
# the worker ("[default0]:"), and stdout as it is. Not --standalone: 1.13's
# puts its store on port 29400, so a test beside this one would use this
# one's store (or this one theirs) and fail to restart once its host ended;
# localhost:0 is a port of torchrun's choosing.
torchrun=(torchrun --rdzv_backend=c10d --rdzv_endpoint=localhost:0 --nnodes=1
  --no_python --redirects=2 --tee=2
  --log_dir="$out/torchrun_logs")

# same_params <a> <b>: the same parameter values (tools/params_hash.py).
same_params() {
  [[ "$(python3 "$root/tools/params_hash.py" "$1")" == \
    "$(python3 "$root/tools/params_hash.py" "$2")" ]]
}

# A free port, as torchrun picks MASTER_PORT.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

common=(--epochs=1 --limit=2000 --test_limit=300 --lr=0.9 --seed=7)

# 1. torchrun, 2 processes of one device = 1 process of 2 devices.
"$lenet" --devices=cpu:2 "${common[@]}" --params_out="$out/one.bin" \
  >"$out/one.txt" 2>/dev/null
"${torchrun[@]}" --nproc_per_node=2 "$lenet" --devices=cpu:1 "${common[@]}" \
  --params_out="$out/torchrun.bin" --metrics_out="$out/torchrun.jsonl" \
  >"$out/torchrun.txt" 2>&1 ||
  fail "lenet_scratch under torchrun failed: $(tail -n 20 "$out/torchrun.txt")"
grep -v '\] *$' "$out/torchrun.txt" | grep -E 'lenet_scratch|epoch 1/1:|test acc'
same_params "$out/one.bin" "$out/torchrun.bin" ||
  fail "under torchrun the parameters differ from the single-process run"
[[ "$(grep -c 'lenet_scratch on 2 processes x \[cpu:0\] (torchrun)' "$out/torchrun.txt")" -eq 1 ]] ||
  fail "expected one setup line, from process 0 only, naming torchrun"
[[ "$(grep -c 'epoch 1/1:' "$out/torchrun.txt")" -eq 1 ]] ||
  fail "expected one epoch line, from process 0 only"
[[ "$(grep -c '^{"epoch"' "$out/torchrun.jsonl")" -eq 1 ]] ||
  fail "expected one metrics line"

# 2. resnet_dp, synchronised batch norm across torchrun's processes.
"${torchrun[@]}" --nproc_per_node=2 "$resnet" --devices=cpu:1 --sync_bn \
  --epochs=1 --limit=64 --test_limit=32 --batch_size=32 \
  --metrics_out="$out/resnet.jsonl" >"$out/resnet.txt" 2>&1 ||
  fail "resnet_dp under torchrun failed: $(tail -n 20 "$out/resnet.txt")"
[[ "$(grep -c '^{"epoch"' "$out/resnet.jsonl")" -eq 1 ]] ||
  fail "resnet_dp: no metrics"
echo "resnet_dp --sync_bn under torchrun: $(grep -o 'epoch 1/1:.*' "$out/resnet.txt")"

# 3. srun's environment, 2 processes of 2 devices = 1 process of 4.
"$lenet" --devices=cpu:4 "${common[@]}" --params_out="$out/four.bin" \
  >/dev/null 2>&1
port="$(free_port)"
pids=()
for task in 0 1; do
  env SLURM_PROCID=$task SLURM_STEP_NUM_TASKS=2 SLURM_LOCALID=$task \
    SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=2 SLURM_STEP_NODELIST=localhost \
    SLURM_JOB_NODELIST=localhost MASTER_PORT="$port" \
    "$lenet" --devices=cpu:2 "${common[@]}" --params_out="$out/srun.bin" \
    >"$out/srun$task.txt" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || fail "a process of the srun-style launch failed: $(tail -n 5 "$out"/srun*.txt)"
done
grep -q 'lenet_scratch on 2 processes x \[cpu:0, cpu:1\] (srun)' \
  "$out/srun0.txt" || fail "the header does not say srun: $(head -n 2 "$out/srun0.txt")"
same_params "$out/four.bin" "$out/srun.bin" ||
  fail "2 processes x 2 devices (srun's environment) differ from 1 x 4"
[[ ! -s "$out/srun1.txt" ]] || fail "process 1 printed: $(cat "$out/srun1.txt")"

# by_hand <name>: a long job of 2 processes started by hand (nothing
# restarts them; pids in ${pids[@]}, output in $out/<name>0.txt and 1),
# returning once its first epoch has ended.
long=(--devices=cpu:1 --epochs=1000 --limit=2048 --test_limit=100)
by_hand() {
  local name="$1" rank port
  port="$(free_port)"
  for rank in 0 1; do
    env RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 \
      MASTER_PORT="$port" "$lenet" "${long[@]}" \
      --metrics_out="$out/$name.jsonl" >"$out/$name$rank.txt" 2>&1 &
    pids[rank]=$!
  done
  for _ in $(seq 3000); do
    grep -q '^{"epoch"' "$out/$name.jsonl" 2>/dev/null && return
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
  fail "the job never finished an epoch: $(tail -n 5 "$out/${name}0.txt")"
}

# 4. Process 1 killed mid-run: the other notices at its next exchange and
# ends with one line naming it.
by_hand killed
start=$(date +%s.%N)
kill -KILL "${pids[1]}"
status=0
wait "${pids[0]}" || status=$?
elapsed="$(python3 -c "import time; print(f'{time.time() - $start:.2f}')")"
grep -v '\] ' "$out/killed0.txt" | tail -n 3
((status == 1)) || fail "the survivor exited $status, not 1"
grep -qE 'error.*process 1 \(host [^)]*\).*closed its connection|rank 1 \(process 1, host [^)]*\) closed its connection' \
  "$out/killed0.txt" || fail "no line names the lost process 1"
echo "the survivor ended ${elapsed} s after the kill"
python3 -c "import sys; sys.exit(0 if $elapsed < 10 else 1)" ||
  fail "the survivor took ${elapsed} s to end"

# 4b. Process 1 stopped (SIGSTOP): its heartbeats stop, and process 0 ends
# within the heartbeat timeout (0.8 s), not the collective's 60 s.
by_hand stopped
start=$(date +%s.%N)
kill -STOP "${pids[1]}"
status=0
wait "${pids[0]}" || status=$?
elapsed="$(python3 -c "import time; print(f'{time.time() - $start:.2f}')")"
kill -KILL "${pids[1]}" 2>/dev/null || true
wait "${pids[1]}" 2>/dev/null || true
grep -v '\] ' "$out/stopped0.txt" | tail -n 1
((status == 1)) || fail "with process 1 stopped, process 0 exited $status, not 1"
grep -q 'error.*process 1 (host [^)]*) stopped answering' "$out/stopped0.txt" ||
  fail "no line names the stopped process 1: $(tail -n 2 "$out/stopped0.txt")"
echo "process 0 ended ${elapsed} s after process 1 was stopped"
python3 -c "import sys; sys.exit(0 if $elapsed < 10 else 1)" ||
  fail "process 0 took ${elapsed} s to end"

# ... and under torchrun (no restarts): the job ends non-zero, every worker
# with it.
"${torchrun[@]}" --nproc_per_node=2 "$lenet" "${long[@]}" \
  --metrics_out="$out/torchkill.jsonl" >"$out/torchkill.txt" 2>&1 &
job=$!
for _ in $(seq 3000); do
  grep -q '^{"epoch"' "$out/torchkill.jsonl" 2>/dev/null && break
  sleep 0.1
done
workers=$(pgrep -f -- "--metrics_out=$out/torchkill.jsonl" | grep -v "^$job\$" || true)
victim=""
for pid in $workers; do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'RANK=1'; then
    victim="$pid"
  fi
done
[[ -n "$victim" ]] || { kill "$job"; fail "cannot find torchrun's worker of rank 1"; }
kill -KILL "$victim"
status=0
wait "$job" || status=$?
((status != 0)) || fail "torchrun ended with status 0 after losing a worker"
for _ in $(seq 50); do
  alive=""
  for pid in $workers; do kill -0 "$pid" 2>/dev/null && alive+=" $pid"; done
  [[ -z "$alive" ]] && break
  sleep 0.1
done
[[ -z "$alive" ]] || fail "a worker of the killed job still runs:$alive"
echo "torchrun ended with status $status after its worker was killed"

# 5. Launched for jobs of different sizes: said by every process that came.
port="$(free_port)"
for rank in 0 1; do
  env RANK=$rank WORLD_SIZE=$((rank + 2)) MASTER_ADDR=127.0.0.1 \
    MASTER_PORT="$port" "$lenet" --devices=cpu:1 "${common[@]}" \
    >"$out/sizes$rank.txt" 2>&1 &
  pids[rank]=$!
done
for rank in 0 1; do
  status=0
  wait "${pids[rank]}" || status=$?
  ((status == 1)) || fail "process $rank exited $status, not 1"
  grep -q 'error: .*process 1 (host .*) was launched for a job of 3 processes, process 0 for 2' \
    "$out/sizes$rank.txt" || fail "process $rank: $(cat "$out/sizes$rank.txt")"
done
echo "mismatched sizes: $(head -n 1 "$out/sizes0.txt")"

# 6. Killed, restarted by torchrun, resumed from the last step checkpoint:
# restarted <trainer> <flags...>, for each trainer.
restarted() {
  local bin="$1" name
  name="$(basename "$1")"
  shift
  "$bin" "$@" --params_out="$out/${name}_straight.bin" >/dev/null 2>&1
  "${torchrun[@]}" --max_restarts=2 --nproc_per_node=2 "$bin" "$@" \
    --checkpoint_dir="$out/${name}_ckpt" --checkpoint_steps=3 \
    --metrics_out="$out/${name}_restart.jsonl" \
    --params_out="$out/${name}_restarted.bin" >"$out/${name}_restart.txt" 2>&1 &
  local job=$!
  for _ in $(seq 6000); do
    [[ -f "$out/${name}_ckpt/$name.ckpt" ]] && break
    sleep 0.01
  done
  local victim="" pid
  for pid in $(pgrep -f -- "--metrics_out=$out/${name}_restart.jsonl"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'RANK=1'; then
      victim="$pid"
    fi
  done
  [[ -n "$victim" ]] || { kill "$job"; fail "$name: cannot find torchrun's worker of rank 1"; }
  kill -KILL "$victim"
  wait "$job" || fail "$name: the restarted job failed: $(grep -v '\] ' "$out/${name}_restart.txt" | tail -n 20)"
  grep -q "^$name: restart 1 of this job: resuming from its checkpoint" \
    "$out/${name}_restart.txt" || fail "$name: no line says the restarted job resumed"
  local resumed
  resumed="$(grep -o "resumed from $out/${name}_ckpt/$name.ckpt at epoch [0-9]*, step [0-9]*" "$out/${name}_restart.txt")" ||
    fail "$name: no 'resumed from' line: $(grep -v '\] ' "$out/${name}_restart.txt" | tail -n 20)"
  echo "$resumed"
  [[ "$resumed" =~ step\ [1-9] ]] || fail "$name: resumed at an epoch's start, not at a step checkpoint"
  grep -q '^{"restart":{"launcher":"torchrun","count":1,"epoch":[0-9]*,"step":[1-9]' \
    "$out/${name}_restart.jsonl" || fail "$name: no restart record in the metrics: $(cat "$out/${name}_restart.jsonl")"
  same_params "$out/${name}_straight.bin" "$out/${name}_restarted.bin" ||
    fail "$name: the restarted job ends elsewhere than the uninterrupted run"
  echo "$name restarted by torchrun: the uninterrupted run's parameters, bit for bit"
}
restart=(--reproducible --devices=cpu:1 --epochs=3 --limit=8000
  --test_limit=200 --seed=5)
restarted "$lenet" "${restart[@]}"
# Batch norm's statistics in the checkpoint.
restarted "$resnet" --reproducible --devices=cpu:1 --epochs=1 --limit=384 \
  --test_limit=32 --batch_size=32 --lr=0.05 --seed=5

# 6b. A "node" lost: two agents, one killed with its worker.
port="$(free_port)"
rm -rf "$out/nodes_ckpt"
agents=()
for node in 0 1; do
  torchrun --nnodes=1:2 --nproc_per_node=1 --rdzv_backend=c10d \
    --rdzv_endpoint=127.0.0.1:"$port" --rdzv_id=nodes --max_restarts=3 \
    --monitor_interval=1 --rdzv_conf=last_call_timeout=1 \
    --log_dir="$out/nodes_logs$node" --no_python --redirects=2 --tee=2 \
    "$lenet" "${restart[@]}" --checkpoint_dir="$out/nodes_ckpt" \
    --checkpoint_steps=5 --params_out="$out/nodes.bin" \
    --metrics_out="$out/nodes.jsonl" >"$out/node$node.txt" 2>&1 &
  agents+=($!)
done
for _ in $(seq 3000); do
  [[ -f "$out/nodes_ckpt/lenet_scratch.ckpt" ]] && break
  sleep 0.01
done
# torchrun's c10d store lives in the agent that took the port: its death
# ends the job whatever the workers do (torchrun's limit), so the other
# one is lost.
store="$(ss -ltnpH "sport = :$port" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)"
lost=""
for a in "${agents[@]}"; do [[ "$a" == "$store" ]] || lost="$a"; done
[[ -n "$store" && -n "$lost" ]] || fail "cannot tell torchrun's agents apart (store: '$store')"
kill -KILL "$lost" $(pgrep -P "$lost") 2>/dev/null || true
wait "$lost" 2>/dev/null || true
wait "$store" || fail "the remaining node's job failed: $(grep -v '\] ' "$out"/node*.txt | tail -n 20)"
survivor="$(grep -l 'resumed from' "$out"/node*.txt)" ||
  fail "the remaining node did not resume: $(grep -v '\] ' "$out"/node*.txt | tail -n 20)"
grep -o "resumed from .* at epoch [0-9]*, step [0-9]* (written .* on 2 processes x \[cpu:0\] (torchrun))" "$survivor" ||
  fail "not resumed from the 2-process checkpoint: $(grep 'resumed from' "$survivor")"
grep -q 'test acc: .* on \[cpu:0\]$' "$survivor" ||
  fail "the remaining node did not finish alone: $(tail -n 3 "$survivor")"
same_params "$out/lenet_scratch_straight.bin" "$out/nodes.bin" ||
  fail "after losing a node the job ends elsewhere than the uninterrupted run"
echo "a node lost: the other resumed alone, the uninterrupted run's parameters, bit for bit"

# 7. A program of one's own.
"$mlp" --devices=cpu:2 --epochs=1 --save="$out/mlp_one.safetensors" \
  >"$out/mlp_one.txt" 2>&1 || fail "train_mlp failed: $(cat "$out/mlp_one.txt")"
"${torchrun[@]}" --nproc_per_node=2 "$mlp" --devices=cpu:1 --epochs=1 \
  --save="$out/mlp_two.safetensors" >"$out/mlp_two.txt" 2>&1 ||
  fail "train_mlp under torchrun failed: $(tail -n 20 "$out/mlp_two.txt")"
[[ "$(grep -c '^epoch 1:' "$out/mlp_two.txt")" -eq 1 ]] ||
  fail "train_mlp: expected one epoch line, from process 0"
cmp -s "$out/mlp_one.safetensors" "$out/mlp_two.safetensors" ||
  fail "train_mlp: 2 processes x cpu:1 saved other parameters than 1 x cpu:2"
echo "train_mlp under torchrun: $(grep '^epoch 1:' "$out/mlp_two.txt")"

echo "PASS"
