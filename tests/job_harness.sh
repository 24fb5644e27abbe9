# Sourced by the tests of jobs of processes started by hand with torchrun's
# environment (regroup_test.sh, elastic_mlp_test.sh). The sourcing test
# sets $out (a folder), $bin (the program), the array run (its flags) and
# defines outputs <name> (the flags naming job <name>'s output files).

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
