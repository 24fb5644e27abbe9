#!/usr/bin/env bash
# --on_process_loss=regroup: a job of processes started by hand with
# torchrun's environment goes on without the ones it loses, no restart.
#  1. 4 processes; a random one of 1-3 killed (SIGKILL) at a random step,
#     then another: each time the living regroup within 5 s ("regrouped:
#     3 of 4", then "2 of 3", a {"regroup"} record each, at most one step
#     computed again) and end with the uninterrupted run's parameters, bit
#     for bit (--reproducible);
#  2. a process stopped (SIGSTOP) with a 1 s heartbeat timeout: named as
#     stopped, left out, the others end with the same parameters; woken
#     (SIGCONT), it exits 1 saying the others went on without it;
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
#     regroup and end with the uninterrupted run's parameters, bit for bit.
# Args: the lenet_scratch and resnet_dp binaries.
set -euo pipefail

lenet="$(realpath "$1")"
resnet="$(realpath "$2")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${TEST_TMPDIR:-$(mktemp -d)}"
fail() {
  echo "FAIL: $*"
  exit 1
}
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }
# seconds_since <start>: "1.23"
seconds_since() { python3 -c "import time; print(f'{time.time() - $1:.2f}')"; }
below() { python3 -c "import sys; sys.exit(0 if $1 < $2 else 1)"; }
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

# start_process <name> <rank> <processes> <port> <log> [env...]: one
# process of job <name>, started by hand with torchrun's environment, in
# the background ($! its pid), its output in <log>.
start_process() {
  local name="$1" p="$2" n="$3" port="$4" log="$5"
  shift 5
  env "$@" RANK="$p" WORLD_SIZE="$n" LOCAL_RANK="$p" MASTER_ADDR=127.0.0.1 \
    MASTER_PORT="$port" "$bin" "${run[@]}" --on_process_loss=regroup \
    --params_out="$out/$name.bin" --metrics_out="$out/$name.jsonl" \
    >"$log" 2>&1 &
}

# job <name> <processes> [env...]: started by hand, pids in ${pids[@]},
# MASTER_PORT in $job_port, output in $out/<name><p>.txt; returns once
# process 0 printed its header.
job() {
  local name="$1" n="$2" port p
  shift 2
  port="$(free_port)"
  job_port="$port"
  pids=()
  for ((p = 0; p < n; ++p)); do
    start_process "$name" "$p" "$n" "$port" "$out/$name$p.txt" "$@"
    pids[p]=$!
  done
  for _ in $(seq 600); do
    grep -q "^$(basename "$bin") on" "$out/${name}0.txt" 2>/dev/null && return
    sleep 0.05
  done
  fail "$name: no header: $(tail -n 3 "$out/${name}0.txt")"
}

# wait_for_line <file> <pattern> <start>: the seconds from <start> until
# the pattern appears (at most 30 s).
wait_for_line() {
  for _ in $(seq 1500); do
    if grep -q "$2" "$1"; then
      seconds_since "$3"
      return
    fi
    sleep 0.02
  done
  fail "no '$2' in $1 within 30 s: $(tail -n 3 "$1")"
}

# 1. Two processes killed in turn, each at a random step.
job killed 4
victims=()
for left in 4 3; do
  sleep "$(python3 -c "import random; print(random.uniform(0.3, 1.5))")"
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

# 2. Process 1 stopped, with a heartbeat timeout of 1 s.
job stopped 3 RINGLET_HEARTBEAT_TIMEOUT_MS=1000
sleep 0.5
start="$(now)"
kill -STOP "${pids[1]}"
took="$(wait_for_line "$out/stopped0.txt" "regrouped: 2 of 3 processes" "$start")"
echo "process 1 stopped: regrouped ${took} s later"
grep -o 'process 1 (host [^)]*) stopped answering: nothing from it for 1.0 s' \
  "$out/stopped0.txt" || fail "no line names the stopped process"
below "$took" 5 || fail "the regroup took $took s after the stop"
wait "${pids[0]}" || fail "process 0 failed: $(tail -n 3 "$out/stopped0.txt")"
wait "${pids[2]}" || fail "process 2 failed: $(tail -n 3 "$out/stopped2.txt")"
kill -CONT "${pids[1]}"
status=0
wait "${pids[1]}" || status=$?
((status == 1)) || fail "the woken process exited $status, not 1"
grep -q 'the others counted this process as lost' "$out/stopped1.txt" ||
  fail "the woken process does not say why it ends: $(cat "$out/stopped1.txt")"
ends_as_straight stopped "a stopped process left out"

# 3. Process 0 killed: nobody can regroup.
job zero 3
sleep 0.5
start="$(now)"
kill -KILL "${pids[0]}"
for p in 1 2; do
  status=0
  wait "${pids[p]}" || status=$?
  ((status == 1)) || fail "process $p exited $status, not 1"
  grep -q "process 0 (host [^)]*) was lost, and it hosts the job's rendezvous" \
    "$out/zero$p.txt" || fail "process $p: $(cat "$out/zero$p.txt")"
done
took="$(seconds_since "$start")"
below "$took" 10 || fail "the others took $took s to end"
echo "process 0 killed: $(grep -o 'cannot regroup: .*rendezvous' "$out/zero1.txt"), ${took} s later"

# 4. Process 1 killed, and a process started in its place joins.
job joined 2
sleep 0.5
kill -KILL "${pids[1]}"
start="$(now)"
took="$(wait_for_line "$out/joined0.txt" "regrouped: 1 of 2 processes" "$start")"
start_process joined 1 2 "$job_port" "$out/joiner.txt"
joiner=$!
start="$(now)"
took="$(wait_for_line "$out/joined0.txt" "regrouped: 2 processes, 1 before" "$start")"
echo "a process started in the place of a killed one joined ${took} s after its start"
for pid in "${pids[0]}" "$joiner"; do
  wait "$pid" || fail "a process of the joined job failed: $(tail -n 3 "$out"/joine*.txt)"
done
grep -q 'joined a running job as process 1 of 2, at epoch' "$out/joiner.txt" ||
  fail "the joiner does not say it joined: $(cat "$out/joiner.txt")"
grep -q 'test acc: .* on 2 processes x \[cpu:0\]' "$out/joined0.txt" ||
  fail "the 2 processes did not finish: $(tail -n 2 "$out/joined0.txt")"
ends_as_straight joined "a process joined"

# 5. etcd keeps the rendezvous's place: process 0 killed, then started again.
[[ -x /usr/bin/etcd ]] ||
  fail "/usr/bin/etcd is missing: Debian's etcd-server (./bazelw installs it)"
client="http://127.0.0.1:$(free_port)"
peer="http://127.0.0.1:$(free_port)"
/usr/bin/etcd --data-dir="$out/etcd" --listen-client-urls="$client" \
  --advertise-client-urls="$client" --listen-peer-urls="$peer" \
  --initial-advertise-peer-urls="$peer" --initial-cluster="default=$peer" \
  >"$out/etcd.txt" 2>&1 &
etcd_pid=$!
trap 'kill -KILL "$etcd_pid" 2>/dev/null || true' EXIT
for _ in $(seq 200); do
  python3 -c "import urllib.request as u; u.urlopen('$client/health', timeout=1)" \
    2>/dev/null && break
  sleep 0.05
done
store="RINGLET_RENDEZVOUS_STORE=etcd://${client#http://}"
job moved 3 "$store"
sleep "$(python3 -c "import random; print(random.uniform(0.3, 1.5))")"
start="$(now)"
kill -KILL "${pids[0]}"
# Whichever survivor the store names hosts the job now.
host=""
for _ in $(seq 500); do
  host="$(grep -l 'regrouped: 2 of 3 processes' "$out"/moved[12].txt 2>/dev/null || true)"
  [[ -n "$host" ]] && break
  sleep 0.02
done
[[ -n "$host" ]] || fail "no survivor regrouped: $(tail -n 3 "$out"/moved[12].txt)"
took="$(seconds_since "$start")"
echo "process 0 killed: $(grep -o 'regrouped: 2 of 3.*' "$host") ${took} s after the kill, hosted by $(basename "$host" .txt)"
below "$took" 5 || fail "the regroup took $took s after the kill"
grep -Eq '(process 0 \(host [^)]*\)|\(process 0, host [^)]*\)) closed its connection.*as the new host' "$host" ||
  fail "the new host does not name the lost process 0: $(cat "$host")"
start_process moved 0 3 "$job_port" "$out/moved_again.txt" "$store"
again=$!
start="$(now)"
took="$(wait_for_line "$host" "regrouped: 3 processes, 2 before" "$start")"
echo "process 0 started again: joined the moved job ${took} s after its start"
for pid in "${pids[1]}" "${pids[2]}" "$again"; do
  wait "$pid" || fail "a process of the moved job failed: $(tail -n 3 "$out"/moved*.txt)"
done
grep -q 'joined a running job as process 2 of 3, at epoch' "$out/moved_again.txt" ||
  fail "process 0 started again does not say it joined: $(cat "$out/moved_again.txt")"
ends_as_straight moved "process 0 lost with etcd as the store"

# 6. resnet_dp: a process killed at a random step of 3.
bin="$resnet"
run=(--reproducible --devices=cpu:1 --epochs=1 --limit=256 --test_limit=32
  --batch_size=32 --lr=0.05 --seed=5)
"$resnet" "${run[@]}" --params_out="$out/resnet_straight.bin" >/dev/null 2>&1
straight="$(hash "$out/resnet_straight.bin")"
job resnet 3
sleep "$(python3 -c "import random; print(random.uniform(0.5, 2.0))")"
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
echo "PASS"
