#!/usr/bin/env bash
# A program of one's own outlives its machines: examples/mlp, through
# parallel::ElasticJob, with --reproducible, in jobs of processes started
# by hand with torchrun's environment (--on_process_loss=regroup):
#  0. launched by torchrun and by mpirun (3 processes): the parameters of
#     one process, bit for bit;
#  1. of 3 processes a random one of 1-2 killed (SIGKILL) at a random step:
#     the others regroup within 5 s and save the uninterrupted run's
#     parameters, bit for bit;
#  2. one stopped (SIGSTOP): named as stopped within 1 s (the default
#     heartbeat timeout), left out, the same parameters; woken, it exits 1;
#  3. process 0 killed, no store: the others end (exit 1) saying it hosts
#     the job's rendezvous;
#  4. of 2 processes one killed, one started in its place joins at the
#     next step with process 0's state: the same parameters;
#  5. with etcd as the store, process 0 killed at a random step: the others
#     regroup under a new host, process 0 started again joins: the same
#     parameters;
#  6. torchrun --max_restarts=2 with --checkpoint: a random worker killed
#     mid-run, torchrun restarts the job, which resumes from the file on
#     its own: the same parameters.
# Args: the train_mlp binary. Needs torchrun, mpirun and etcd (./bazelw
# installs python3-torch, openmpi-bin and etcd-server).
set -euo pipefail

bin="$(realpath "$1")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${TEST_TMPDIR:-$(mktemp -d)}"
# shellcheck source=tests/job_harness.sh
source "$root/tests/job_harness.sh"
data="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
run=(--reproducible --devices=cpu:1 --epochs=4 --limit=30000
  --data_dir="$data")
outputs() { echo "--save=$out/$1.safetensors"; }
"$bin" "${run[@]}" --save="$out/straight.safetensors" >/dev/null
straight="$(sha256sum <"$out/straight.safetensors")"
ends_as_straight() {
  [[ "$(sha256sum <"$out/$1.safetensors")" == "$straight" ]] ||
    fail "$2: the job ends elsewhere than the uninterrupted run"
  echo "$2: the uninterrupted run's parameters, bit for bit"
}

# 0. Launched by torchrun and by mpirun, 3 processes of one device: the
# parameters of one process, bit for bit.
torchrun --standalone --nproc_per_node=3 --no_python --redirects=2 --tee=2 \
  "$bin" "${run[@]}" --save="$out/torchrun.safetensors" >"$out/torchrun.txt" 2>&1 ||
  fail "under torchrun: $(tail -n 3 "$out/torchrun.txt")"
ends_as_straight torchrun "3 processes under torchrun"
command -v mpirun >/dev/null || fail "mpirun not found: install openmpi-bin (./bazelw does)"
mpi=(mpirun --oversubscribe --bind-to none --mca btl tcp,self)
if ((EUID == 0)); then mpi+=(--allow-run-as-root); fi
HOME="$out" "${mpi[@]}" -np 3 "$bin" "${run[@]}" \
  --save="$out/mpirun.safetensors" >"$out/mpirun.txt" 2>&1 ||
  fail "under mpirun: $(tail -n 3 "$out/mpirun.txt")"
ends_as_straight mpirun "3 processes under mpirun"

# 1. A random process of 1-2 killed at a random step.
job killed 3
sleep "$(random_between 0.2 1.2)"
victim=$((1 + RANDOM % 2))
kill -0 "${pids[victim]}" 2>/dev/null || fail "process $victim ended early"
start="$(now)"
kill -KILL "${pids[victim]}"
took="$(wait_for_line "$out/killed0.txt" "regrouped: 2 of 3 processes" "$start")"
echo "killed process $victim: $(grep -o 'regrouped: 2 of 3.*' "$out/killed0.txt") ${took} s after the kill"
below "$took" 5 || fail "the regroup took $took s"
for p in 0 $((3 - victim)); do
  wait "${pids[p]}" || fail "survivor $p failed: $(tail -n 3 "$out/killed$p.txt")"
done
grep -Eq "(process $victim \(host [^)]*\)|\(process $victim, host [^)]*\)) closed its connection" \
  "$out/killed0.txt" ||
  fail "no line names the killed process: $(cat "$out/killed0.txt")"
ends_as_straight killed "a killed process"

# 2-5. The cases every program that regroups passes (tests/job_harness.sh).
stopped_case stopped
zero_case zero
joined_case joined
start_etcd
moved_case moved

# 6. torchrun restarts the job after a worker's SIGKILL; it resumes from
# the checkpoint on its own.
torchrun --standalone --nproc_per_node=3 --max_restarts=2 --no_python \
  --redirects=2 --tee=2 "$bin" "${run[@]}" \
  --checkpoint="$out/restart.ckpt" --checkpoint_steps=10 \
  --save="$out/restarted.safetensors" >"$out/restart.txt" 2>&1 &
torchrun_pid=$!
wait_for_file "$out/restart.ckpt" "$out/restart.txt"
sleep "$(random_between 0 0.8)"
rank=$((RANDOM % 3))
victim="$(worker_of_rank "--save=$out/restarted.safetensors" "$rank")"
[[ -n "$victim" ]] || fail "no worker of rank $rank to kill"
kill -KILL "$victim"
wait "$torchrun_pid" || fail "torchrun failed: $(tail -n 5 "$out/restart.txt")"
grep -q 'restart 1 of this job: resuming from .*restart.ckpt (epoch' "$out/restart.txt" ||
  fail "the restarted job does not say it resumed: $(grep train_mlp "$out/restart.txt")"
echo "rank $rank killed: $(grep -o 'restart 1 of this job: resuming.*' "$out/restart.txt")"
ends_as_straight restarted "torchrun's restart after a SIGKILL"
echo "PASS"
