#!/usr/bin/env bash
# --on_process_loss=regroup: a job of processes started by hand with
# torchrun's environment goes on without the ones it loses, no restart.
#  1. 4 processes; a random one of 1-3 killed (SIGKILL) at a random step,
#     then another: each time the living regroup within 5 s ("regrouped:
#     3 of 4", then "2 of 3", a {"regroup"} record each, at most one step
#     computed again) and end with the uninterrupted run's parameters, bit
#     for bit (--reproducible);
#  2. a process stopped (SIGSTOP): named as stopped within 1 s (the
#     default heartbeat timeout), left out, the others end with the same
#     parameters; woken (SIGCONT), it exits 1 saying the others went on
#     without it;
#  3. process 0 killed: the others end (exit 1) within seconds, saying it
#     hosts the job's rendezvous;
#  4. of 2 processes one killed (process 0 goes on alone), then one started
#     in its place with the same environment: it joins at the next step
#     with process 0's state ("regrouped: 2 processes, 1 before"), and the
#     job ends with the uninterrupted run's parameters, bit for bit;
#  5. with etcd as the rendezvous store (RINGLET_RENDEZVOUS_STORE, a server
#     the test starts), process 0 killed at a random step: the others
#     regroup under a new host within 5 s, a process 0 started again finds
#     it through etcd and joins, and the job ends with the uninterrupted
#     run's parameters, bit for bit;
#  6. resnet_dp (batch norm's statistics in the kept state): of 3
#     processes a random one of 1-2 killed at a random step, the others
#     regroup and end with the uninterrupted run's parameters, bit for bit;
#  7. resnet_dp: of 2 processes one killed, one started in its place joins
#     with the state process 0 sends: the same parameters;
#  8-10. resnet_dp: cases 2, 3 and 5 again.
# Args: the lenet_scratch and resnet_dp binaries.
set -euo pipefail

lenet="$(realpath "$1")"
resnet="$(realpath "$2")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${TEST_TMPDIR:-$(mktemp -d)}"
# shellcheck source=tests/job_harness.sh
source "$root/tests/job_harness.sh"
hash() { python3 "$root/tools/params_hash.py" "$1"; }

# The trainer that start_process starts, and its flags.
bin="$lenet"
run=(--reproducible --devices=cpu:1 --epochs=4 --limit=12000 --test_limit=200
  --seed=5)
"$lenet" "${run[@]}" --params_out="$out/straight.bin" >/dev/null 2>&1
straight="$(hash "$out/straight.bin")"

# ends_as_straight <name> <what happened>: job <name> ended with the
# uninterrupted run's parameters, bit for bit.
ends_as_straight() {
  [[ "$(hash "$out/$1.bin")" == "$straight" ]] ||
    fail "$2: the job ends elsewhere than the uninterrupted run"
  echo "$2: the uninterrupted run's parameters, bit for bit"
}

outputs() { echo "--params_out=$out/$1.bin --metrics_out=$out/$1.jsonl"; }

# 1. Two processes killed in turn, each at a random step.
job killed 4
victims=()
for left in 4 3; do
  sleep "$(random_between 0.3 1.5)"
  candidates=()
  for ((p = 1; p < 4; ++p)); do
    [[ " ${victims[*]} " == *" $p "* ]] || candidates+=("$p")
  done
  victim="${candidates[RANDOM % ${#candidates[@]}]}"
  victims+=("$victim")
  kill -0 "${pids[victim]}" 2>/dev/null ||
    fail "process $victim had ended before it was killed"
  start="$(now)"
  kill -KILL "${pids[victim]}"
  took="$(wait_for_line "$out/killed0.txt" "regrouped: $((left - 1)) of $left processes" "$start")"
  echo "killed launch process $victim: $(grep -o "regrouped: $((left - 1)) of $left.*" "$out/killed0.txt") ${took} s after the kill"
  below "$took" 5 || fail "the regroup took $took s after the kill"
done
for p in 0 1 2 3; do
  [[ " ${victims[*]} " == *" $p "* ]] && continue
  wait "${pids[p]}" || fail "survivor $p failed: $(tail -n 3 "$out/killed$p.txt")"
done
grep -q 'closed its connection' "$out/killed0.txt" ||
  fail "no line names the killed process"
[[ "$(grep -c '^{"regroup":' "$out/killed.jsonl")" -eq 2 ]] ||
  fail "expected 2 regroup records: $(grep regroup "$out/killed.jsonl")"
grep -q '"membership":2,"processes":2,"processes_before":3' "$out/killed.jsonl" ||
  fail "the second regroup's record: $(grep regroup "$out/killed.jsonl")"
! grep -q '"steps_recomputed":[2-9]' "$out/killed.jsonl" ||
  fail "more than one step computed again"
grep -q 'test acc: .* on 2 processes x \[cpu:0\]' "$out/killed0.txt" ||
  fail "the 2 survivors did not finish: $(tail -n 2 "$out/killed0.txt")"
ends_as_straight killed "2 of 4 processes killed"

# 2. Process 1 stopped.
stopped_case stopped

# 3. Process 0 killed: nobody can regroup.
zero_case zero

# 4. Process 1 killed, and a process started in its place joins.
joined_case joined

# 5. etcd keeps the rendezvous's place: process 0 killed, then started again.
start_etcd
moved_case moved

# 6. resnet_dp: a process killed at a random step of 3.
bin="$resnet"
run=(--reproducible --devices=cpu:1 --epochs=1 --limit=256 --test_limit=32
  --batch_size=32 --lr=0.05 --seed=5)
"$resnet" "${run[@]}" --params_out="$out/resnet_straight.bin" >/dev/null 2>&1
straight="$(hash "$out/resnet_straight.bin")"
job resnet 3
sleep "$(random_between 0.5 2.0)"
victim=$((1 + RANDOM % 2))
kill -0 "${pids[victim]}" 2>/dev/null ||
  fail "resnet_dp: process $victim had ended before it was killed"
start="$(now)"
kill -KILL "${pids[victim]}"
took="$(wait_for_line "$out/resnet0.txt" "regrouped: 2 of 3 processes" "$start")"
echo "resnet_dp: killed process $victim: $(grep -o 'regrouped: 2 of 3.*' "$out/resnet0.txt") ${took} s after the kill"
below "$took" 5 || fail "resnet_dp: the regroup took $took s after the kill"
for p in 0 1 2; do
  ((p == victim)) && continue
  wait "${pids[p]}" || fail "resnet_dp: survivor $p failed: $(tail -n 3 "$out/resnet$p.txt")"
done
grep -q 'test acc: .* on 2 processes x \[cpu:0\]' "$out/resnet0.txt" ||
  fail "resnet_dp: the 2 survivors did not finish: $(tail -n 2 "$out/resnet0.txt")"
ends_as_straight resnet "resnet_dp lost a process"

# 7. resnet_dp: one of 2 killed, one started in its place joins with the
# state process 0 sends (batch norm's statistics in it).
run=(--reproducible --devices=cpu:1 --epochs=1 --limit=384 --test_limit=32
  --batch_size=32 --lr=0.05 --seed=5)
"$resnet" "${run[@]}" --params_out="$out/resnet_straight.bin" >/dev/null 2>&1
straight="$(hash "$out/resnet_straight.bin")"
joined_case resnet_joined

# 8-10. resnet_dp: a process stopped; process 0 killed without a store;
# with etcd, process 0 killed and started again.
run=(--reproducible --devices=cpu:1 --epochs=1 --limit=512 --test_limit=32
  --batch_size=32 --lr=0.05 --seed=5)
"$resnet" "${run[@]}" --params_out="$out/resnet_straight.bin" >/dev/null 2>&1
straight="$(hash "$out/resnet_straight.bin")"
stopped_case resnet_stopped
zero_case resnet_zero
moved_case resnet_moved
echo "PASS"
