#!/usr/bin/env bash
# Several hosts, simulated on one machine: network namespaces of the test's
# own joined by a bridge (ip netns, veth), each "host" with its own name
# and its own /etc/hosts as Debian writes one (its name on 127.0.1.1, the
# others' on their addresses), so that a host reaches itself by name over
# loopback and the others over the bridge, as on a real cluster. Traffic
# stays among the namespaces. lenet_scratch --reproducible throughout:
#  1. launched by hand with torchrun's environment, MASTER_ADDR the name of
#     host 0, 2 processes on host 0 and one on each of hosts 1 and 2: the
#     parameters of one process, bit for bit;
#  2. torchrun across two hosts (an agent on each, --nnodes=2
#     --nproc_per_node=2, its c10d rendezvous on host 0): the same;
#  3. torchrun --max_restarts=1 on two hosts, each with a disk of its own,
#     a worker on host 1 killed (SIGKILL): the restarted job resumes on both
#     hosts from the checkpoint on host 0's disk, which process 0 sends;
#     the same parameters;
#  4. --on_process_loss=regroup, host 2's cable cut mid-run (its link
#     down: no connection closes, its process simply goes silent): the
#     others name it within the heartbeat timeout, regroup and end with
#     the same parameters; host 2's process ends on its own, saying why;
#  5. with etcd (on host 2) as the rendezvous store, process 0 killed on
#     host 0: the survivors (one on host 0, one on host 1) go on under a
#     new host, process 0 started again joins them, the same parameters;
#  6. with etcd on host 2, host 2's cable cut: the store names one host
#     for the regroup, so one job goes on (process 2's, which reaches the
#     store) and processes 0 and 1 end saying they cannot reach it; never
#     two jobs writing one set of outputs. The same parameters.
# Needs root and network namespaces (ip, from iproute2); where it cannot
# make them it says so and passes. Args: the lenet_scratch binary.
set -euo pipefail

bin="$(realpath "$1")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${TEST_TMPDIR:-$(mktemp -d)}"
# shellcheck source=tests/job_harness.sh
source "$root/tests/job_harness.sh"
if ((EUID != 0)); then
  echo "not root: network namespaces cannot be made here; nothing tested"
  exit 0
fi
PATH="$PATH:/usr/sbin:/sbin"  # ip
command -v ip >/dev/null || fail "ip not found: install iproute2 (./bazelw does)"
command -v unshare >/dev/null || fail "unshare not found (util-linux)"
hash() { python3 "$root/tools/params_hash.py" "$1"; }

# The hosts: namespaces <prefix>-h<k> at 10.201.0.<k+1>, named node<k>,
# cabled to a bridge in <prefix>-sw.
prefix="ringlet$$"
hosts=3
addr() { echo "10.201.0.$(($1 + 1))"; }
cleanup() {
  local ns
  for ns in $(ip netns list | grep -o "^$prefix-[a-z0-9]*" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
if ! why="$(ip netns add "$prefix-sw" 2>&1)"; then
  echo "network namespaces cannot be made here ($why): nothing tested"
  exit 0
fi
ip -n "$prefix-sw" link add br0 type bridge
ip -n "$prefix-sw" link set br0 up
for ((k = 0; k < hosts; ++k)); do
  ns="$prefix-h$k"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns" link add eth0 type veth peer name "h$k" netns "$prefix-sw"
  ip -n "$prefix-sw" link set "h$k" master br0 up
  ip -n "$ns" addr add "$(addr "$k")/24" dev eth0
  ip -n "$ns" link set eth0 up
  {
    echo "127.0.0.1 localhost"
    echo "127.0.1.1 node$k"
    for ((j = 0; j < hosts; ++j)); do
      ((j == k)) || echo "$(addr "$j") node$j"
    done
  } >"$out/hosts$k"
  mkdir -p "$out/hosts$k.disk"
done

# on_host <k>: sets the array `at` to the words that run a command on host
# k (its network, its name, its /etc/hosts, its own disk at /mnt) as the
# same process: "${at[@]}" cmd & gives the command's own pid in $!.
on_host() {
  at=(ip netns exec "$prefix-h$1" unshare --mount --uts sh -c
    'mount --bind "$0" /etc/hosts && mount --bind "$0.disk" /mnt &&
     hostname "$1" && shift && exec "$@"'
    "$out/hosts$1" "node$1")
}
# The cables take a moment to come up.
reach() {
  on_host 1
  "${at[@]}" python3 -c "import socket; socket.create_connection(('node2', 9), 1)" 2>&1 |
    tail -n 1
}
for _ in $(seq 50); do
  [[ "$(reach)" == *refused* ]] && break
  sleep 0.1
done
[[ "$(reach)" == *refused* ]] || fail "host 1 cannot reach host 2: $(reach)"

run=(--reproducible --devices=cpu:1 --epochs=3 --limit=12000 --test_limit=200
  --seed=5)
"$bin" "${run[@]}" --params_out="$out/straight.bin" >/dev/null 2>&1
straight="$(hash "$out/straight.bin")"
ends_as_straight() {
  [[ "$(hash "$out/$1.bin")" == "$straight" ]] ||
    fail "$2: the job ends elsewhere than the uninterrupted run"
  echo "$2: the one-process run's parameters, bit for bit"
}

# start_on <k> <name> <rank> <processes> [env...]: one process of job
# <name> on host k, started by hand with torchrun's environment and
# MASTER_ADDR=node0 (loopback on host 0, the bridge elsewhere); its pid in
# $!, its output in $out/<name><rank>.txt.
start_on() {
  local k="$1" name="$2" p="$3" n="$4"
  shift 4
  on_host "$k"
  "${at[@]}" env "$@" RANK="$p" WORLD_SIZE="$n" LOCAL_RANK=0 \
    MASTER_ADDR=node0 MASTER_PORT=29500 RINGLET_JOB_ID="$name" \
    "$bin" "${run[@]}" --params_out="$out/$name.bin" \
    >"$out/$name$p.txt" 2>&1 &
}
# hosts_job <name> "<host of process 0> <of 1> ..." [env...]: a job of one
# process per host named, pids in ${pids[@]}; returns once process 0 has
# printed its header.
hosts_job() {
  local name="$1" k p=0
  read -ra where <<<"$2"
  shift 2
  pids=()
  for k in "${where[@]}"; do
    start_on "$k" "$name" "$p" "${#where[@]}" "$@"
    pids+=($!)
    p=$((p + 1))
  done
  wait_for_line "$out/${name}0.txt" "^$(basename "$bin") on" "$(now)" >/dev/null
}
# torchrun_hosts <name> <workers per host> [torchrun flags] -- [flags]:
# torchrun's agents on hosts 0 and 1, its c10d rendezvous on host 0, each
# starting the workers with ${run[@]} and the flags; pids in ${pids[@]},
# output in $out/<name><host>.txt, parameters in $out/<name>.bin.
torchrun_hosts() {
  local name="$1" workers="$2" port k agent=()
  shift 2
  while [[ "$1" != -- ]]; do
    agent+=("$1")
    shift
  done
  shift
  port="$(free_port)"
  pids=()
  for k in 0 1; do
    on_host "$k"
    "${at[@]}" torchrun --nnodes=2 --nproc_per_node="$workers" \
      --rdzv_backend=c10d --rdzv_endpoint="node0:$port" --rdzv_id="$name" \
      "${agent[@]}" --no_python --redirects=2 --tee=2 "$bin" "${run[@]}" \
      "$@" --params_out="$out/$name.bin" >"$out/$name$k.txt" 2>&1 &
    pids+=($!)
  done
}
# finish <name> <pid...>: each of the job's processes ends well.
finish() {
  local name="$1" pid
  shift
  for pid in "$@"; do
    wait "$pid" || fail "$name: a process failed: $(tail -n 3 "$out/$name"*.txt)"
  done
}

# 1. Launched by hand across three hosts, two processes on host 0.
hosts_job launched "0 0 1 2"
finish launched "${pids[@]}"
grep -q 'on 4 processes' "$out/launched0.txt" ||
  fail "launched: not a job of 4 processes: $(tail -n 2 "$out/launched0.txt")"
ends_as_straight launched "4 processes on 3 hosts, by hand"

# 2. torchrun on two hosts, two workers each; its rendezvous on host 0.
torchrun_hosts torchrun 2 --
finish torchrun "${pids[@]}"
ends_as_straight torchrun "torchrun on 2 hosts x 2 workers"

# 3. torchrun --max_restarts=1 on two hosts, each with a disk of its own
# (--checkpoint_dir=/mnt/ck is host 0's alone), a worker on host 1 killed
# mid-run: the restarted job resumes from process 0's checkpoint on both
# hosts, process 0 sending it.
torchrun_hosts restart 1 --max_restarts=1 --monitor_interval=1 -- \
  --checkpoint_dir=/mnt/ck --checkpoint_steps=10
wait_for_file "$out/hosts0.disk/ck/$(basename "$bin").ckpt" "$out/restart0.txt"
sleep "$(random_between 0 0.5)"
victim="$(worker_of_rank "--params_out=$out/restart.bin" 1)"
[[ -n "$victim" ]] || fail "restart: no worker of rank 1 to kill"
kill -KILL "$victim"
finish restart "${pids[@]}"
grep -o 'restart 1 of this job: resuming from its checkpoint.*' "$out/restart0.txt" ||
  fail "restart: the job does not say it resumed: $(grep -v '^\[' "$out/restart0.txt" | tail -n 5)"
[[ ! -e "$out/hosts1.disk/ck" ]] || fail "restart: host 1 wrote to its own disk"
ends_as_straight restart "torchrun's restart on 2 hosts, the checkpoint on host 0's disk"

# 4. Host 2's cable cut mid-run: its process goes silent, nothing closes.
run+=(--on_process_loss=regroup)
hosts_job cut "0 1 2"
sleep "$(random_between 0.5 1.5)"
start="$(now)"
ip -n "$prefix-sw" link set h2 down
named="$(wait_for_line "$out/cut0.txt" 'process 2 (host node2) stopped answering' "$start")"
took="$(wait_for_line "$out/cut0.txt" 'regrouped: 2 of 3 processes' "$start")"
echo "cut: host 2's link down: named ${named} s later, regrouped ${took} s later"
below "$named" 1.5 || fail "cut: host 2's process was named after $named s"
below "$took" 5 || fail "cut: the regroup took $took s"
finish cut "${pids[0]}" "${pids[1]}"
status=0
wait "${pids[2]}" || status=$?
((status == 1)) || fail "cut: host 2's process exited $status, not 1"
grep -q 'stopped answering' "$out/cut2.txt" ||
  fail "cut: host 2's process does not say why it ended: $(tail -n 3 "$out/cut2.txt")"
echo "cut: host 2's process: $(grep -o 'stopped answering[^:]*' "$out/cut2.txt" | head -n 1)"
ends_as_straight cut "host 2 cut off"
ip -n "$prefix-sw" link set h2 up

# 5. etcd on host 2; process 0 killed on host 0, started there again.
client="http://$(addr 2):$(free_port)"
peer="http://$(addr 2):$(free_port)"
on_host 2
"${at[@]}" /usr/bin/etcd --data-dir="$out/etcd" --listen-client-urls="$client" \
  --advertise-client-urls="$client" --listen-peer-urls="$peer" \
  --initial-advertise-peer-urls="$peer" --initial-cluster="default=$peer" \
  >"$out/etcd.txt" 2>&1 &
for _ in $(seq 200); do
  on_host 0
  "${at[@]}" python3 -c "import urllib.request as u; u.urlopen('$client/health', timeout=1)" \
    2>/dev/null && break
  sleep 0.1
done
store="RINGLET_RENDEZVOUS_STORE=etcd://${client#http://}"
hosts_job moved "0 0 1" "$store"
sleep "$(random_between 0.3 1.5)"
# Process 2 held back a moment: process 1, on process 0's host, claims the
# job in the store, and host 1 must reach it where it reached process 0.
kill -STOP "${pids[2]}"
start="$(now)"
kill -KILL "${pids[0]}"
sleep 0.2
kill -CONT "${pids[2]}"
host="$out/moved1.txt"
took="$(wait_for_line "$host" 'regrouped: 2 of 3 processes' "$start")"
echo "moved: process 0 killed: $(grep -o 'regrouped: 2 of 3.*' "$host") ${took} s later, hosted by process 1 on host 0"
on_host 0
"${at[@]}" env "$store" RANK=0 WORLD_SIZE=3 LOCAL_RANK=0 MASTER_ADDR=node0 \
  MASTER_PORT=29500 RINGLET_JOB_ID=moved "$bin" "${run[@]}" \
  --params_out="$out/moved.bin" >"$out/moved_again.txt" 2>&1 &
again=$!
wait_for_line "$host" "regrouped: 3 processes, 2 before" "$(now)" >/dev/null
finish moved "${pids[1]}" "${pids[2]}" "$again"
grep -q 'joined a running job as process 2 of 3' "$out/moved_again.txt" ||
  fail "moved: process 0 started again does not say it joined: $(cat "$out/moved_again.txt")"
ends_as_straight moved "process 0 lost on host 0, etcd on host 2"

# 6. Host 2 cut off from the others but not from the store (etcd on host
# 2): the store names the regroup's one host, so one job goes on, process
# 2's; processes 0 and 1 end, as they cannot reach the store.
hosts_job split "0 1 2" "$store"
sleep "$(random_between 0.5 1.5)"
start="$(now)"
ip -n "$prefix-sw" link set h2 down
for p in 0 1; do
  status=0
  wait "${pids[p]}" || status=$?
  ((status == 1)) || fail "split: process $p exited $status, not 1"
  grep -q 'the rendezvous store decides who hosts the regroup, and this process cannot reach it' \
    "$out/split$p.txt" || fail "split: process $p: $(tail -n 3 "$out/split$p.txt")"
done
echo "split: processes 0 and 1 ended $(seconds_since "$start") s after the cut: $(grep -o 'the rendezvous store decides.*cannot reach it' "$out/split1.txt")"
finish split "${pids[2]}"
grep -o 'regrouped: 1 of 3 processes.*' "$out/split2.txt" ||
  fail "split: process 2 did not go on alone: $(tail -n 3 "$out/split2.txt")"
[[ "$(cat "$out"/split*.txt | grep -c '^test acc:')" -eq 1 ]] ||
  fail "split: not one job finished: $(grep -h '^test acc:' "$out"/split*.txt)"
ends_as_straight split "host 2 cut off from the others, not from the store"
ip -n "$prefix-sw" link set h2 up
echo "PASS"
