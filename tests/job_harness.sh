# Sourced by the tests of jobs of processes started by hand with torchrun's
# environment (regroup_test.sh, elastic_mlp_test.sh). The sourcing test
# sets $out (a folder), $bin (the program), the array run (its flags) and
# defines outputs <name> (the flags naming job <name>'s output files) and,
# for the cases at the end, ends_as_straight <name> <what> (job <name>
# ended with the uninterrupted run's parameters, or the test fails).

fail() {
  echo "FAIL: $*"
  exit 1
}
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }
# seconds_since <start>: "1.23" (no Python: its start-up would count).
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f\n", b - a }'; }
below() { python3 -c "import sys; sys.exit(0 if $1 < $2 else 1)"; }
random_between() { python3 -c "import random; print(random.uniform($1, $2))"; }

# wait_for_file <path> <log>: returns once the file exists (at most 30 s),
# else fails with the log's last lines.
wait_for_file() {
  for _ in $(seq 3000); do
    [[ -f "$1" ]] && return
    sleep 0.01
  done
  fail "no $1 within 30 s: $(tail -n 3 "$2")"
}

# worker_of_rank <pattern> <rank>: the pid of the process whose command
# line holds the pattern and whose environment has RANK=<rank> (a worker a
# launcher started), or nothing.
worker_of_rank() {
  local pid
  for pid in $(pgrep -f -- "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "RANK=$2"; then
      echo "$pid"
      return
    fi
  done
}

# start_process <name> <rank> <processes> <port> <log> [env...]: one
# process of job <name>, started by hand with torchrun's environment, in
# the background ($! its pid), its output in <log>.
start_process() {
  local name="$1" p="$2" n="$3" port="$4" log="$5"
  shift 5
  # shellcheck disable=SC2046 # outputs gives flags, one a word.
  env "$@" RANK="$p" WORLD_SIZE="$n" LOCAL_RANK="$p" MASTER_ADDR=127.0.0.1 \
    MASTER_PORT="$port" "$bin" "${run[@]}" --on_process_loss=regroup \
    $(outputs "$name") >"$log" 2>&1 &
}

# job <name> <processes> [env...]: started by hand, pids in ${pids[@]},
# MASTER_PORT in $job_port, output in $out/<name><p>.txt; returns once
# process 0 printed its header ("<program> on ...").
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

# start_etcd: Debian's etcd on free ports, data in $out/etcd, stopped when
# the test exits; $store is the setting that gives it to a job.
start_etcd() {
  [[ -x /usr/bin/etcd ]] ||
    fail "/usr/bin/etcd is missing: Debian's etcd-server (./bazelw installs it)"
  local client peer
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
}

# The cases every program that regroups must pass, each a job <name>.

# stopped_case <name>: of 3 processes of $bin, process 1 stopped: named
# within 1 s (the default heartbeat timeout), the others regroup and end as
# the uninterrupted run; woken, it exits 1 saying why.
stopped_case() {
  local name="$1" named took status
  job "$name" 3
  sleep 0.5
  start="$(now)"
  kill -STOP "${pids[1]}"
  named="$(wait_for_line "$out/${name}0.txt" 'process 1 (host [^)]*) stopped answering' "$start")"
  took="$(wait_for_line "$out/${name}0.txt" "regrouped: 2 of 3 processes" "$start")"
  echo "$name: process 1 stopped: named ${named} s later, regrouped ${took} s later"
  grep -o 'process 1 (host [^)]*) stopped answering: nothing from it for 0.8 s' \
    "$out/${name}0.txt" || fail "$name: no line names the stopped process"
  # The heartbeats name it 0.7-0.85 s after the stop; the rest is this
  # script's polling on a machine other tests load too.
  below "$named" 1.2 || fail "$name: the stopped process was named after $named s"
  below "$took" 5 || fail "$name: the regroup took $took s after the stop"
  wait "${pids[0]}" || fail "$name: process 0 failed: $(tail -n 3 "$out/${name}0.txt")"
  wait "${pids[2]}" || fail "$name: process 2 failed: $(tail -n 3 "$out/${name}2.txt")"
  kill -CONT "${pids[1]}"
  status=0
  wait "${pids[1]}" || status=$?
  ((status == 1)) || fail "$name: the woken process exited $status, not 1"
  grep -q 'the others counted this process as lost' "$out/${name}1.txt" ||
    fail "$name: the woken process does not say why it ends: $(cat "$out/${name}1.txt")"
  ends_as_straight "$name" "$name: a stopped process left out"
}

# zero_case <name>: of 3 processes, process 0 killed with no store: the
# others end (exit 1) within seconds, saying it hosts the rendezvous.
zero_case() {
  local name="$1" p status took
  job "$name" 3
  sleep 0.5
  start="$(now)"
  kill -KILL "${pids[0]}"
  for p in 1 2; do
    status=0
    wait "${pids[p]}" || status=$?
    ((status == 1)) || fail "$name: process $p exited $status, not 1"
    grep -q "process 0 (host [^)]*) was lost, and it hosts the job's rendezvous" \
      "$out/$name$p.txt" || fail "$name: process $p: $(cat "$out/$name$p.txt")"
  done
  took="$(seconds_since "$start")"
  below "$took" 10 || fail "$name: the others took $took s to end"
  echo "$name: process 0 killed: $(grep -o 'cannot regroup: .*rendezvous' "$out/${name}1.txt"), ${took} s later"
}

# moved_case <name>: of 3 processes with etcd as the store ($store),
# process 0 killed at a random step: a survivor hosts the job, process 0
# started again joins it, and the job ends as the uninterrupted run.
moved_case() {
  local name="$1" host="" took again pid
  job "$name" 3 "$store"
  sleep "$(random_between 0.3 1.5)"
  start="$(now)"
  kill -KILL "${pids[0]}"
  # Whichever survivor the store names hosts the job now.
  for _ in $(seq 500); do
    host="$(grep -l 'regrouped: 2 of 3 processes' "$out/${name}1.txt" "$out/${name}2.txt" 2>/dev/null || true)"
    [[ -n "$host" ]] && break
    sleep 0.02
  done
  [[ -n "$host" ]] || fail "$name: no survivor regrouped: $(tail -n 3 "$out/${name}1.txt" "$out/${name}2.txt")"
  took="$(seconds_since "$start")"
  echo "$name: process 0 killed: $(grep -o 'regrouped: 2 of 3.*' "$host") ${took} s after the kill, hosted by $(basename "$host" .txt)"
  below "$took" 5 || fail "$name: the regroup took $took s after the kill"
  grep -Eq '(process 0 \(host [^)]*\)|\(process 0, host [^)]*\)) closed its connection.*as the new host' "$host" ||
    fail "$name: the new host does not name the lost process 0: $(cat "$host")"
  start_process "$name" 0 3 "$job_port" "$out/${name}_again.txt" "$store"
  again=$!
  start="$(now)"
  took="$(wait_for_line "$host" "regrouped: 3 processes, 2 before" "$start")"
  echo "$name: process 0 started again: joined the moved job ${took} s after its start"
  for pid in "${pids[1]}" "${pids[2]}" "$again"; do
    wait "$pid" || fail "$name: a process of the moved job failed: $(tail -n 3 "$out/$name"*.txt)"
  done
  grep -q 'joined a running job as process 2 of 3, at epoch' "$out/${name}_again.txt" ||
    fail "$name: process 0 started again does not say it joined: $(cat "$out/${name}_again.txt")"
  ends_as_straight "$name" "$name: process 0 lost with etcd as the store"
}

# joined_case <name>: of 2 processes process 1 killed, one started in its
# place joins at the next step with process 0's state, and the job ends as
# the uninterrupted run.
joined_case() {
  local name="$1" took joiner pid
  job "$name" 2
  sleep 0.5
  start="$(now)"
  kill -KILL "${pids[1]}"
  wait_for_line "$out/${name}0.txt" "regrouped: 1 of 2 processes" "$start" >/dev/null
  start_process "$name" 1 2 "$job_port" "$out/${name}_joiner.txt"
  joiner=$!
  start="$(now)"
  took="$(wait_for_line "$out/${name}0.txt" "regrouped: 2 processes, 1 before" "$start")"
  echo "$name: a process started in a killed one's place joined ${took} s after its start"
  for pid in "${pids[0]}" "$joiner"; do
    wait "$pid" || fail "$name: a process of the joined job failed: $(tail -n 3 "$out/$name"*.txt)"
  done
  grep -q 'joined a running job as process 1 of 2, at epoch' "$out/${name}_joiner.txt" ||
    fail "$name: the joiner does not say it joined: $(cat "$out/${name}_joiner.txt")"
  ends_as_straight "$name" "$name: a process joined"
}
