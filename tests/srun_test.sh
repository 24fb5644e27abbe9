#!/usr/bin/env bash
# The trainers under a real Slurm: a single-host cluster (slurmctld,
# slurmd, munge; Debian's slurm-wlm, which ./bazelw installs) brought up
# in the test's own folder on ports of its own, then
#  1. `srun -n 2 lenet_scratch --devices=cpu:1 --reproducible` (no MPI:
#     SLURM_PROCID and friends, ringlet's TCP transport) ends with the
#     parameters of one process, bit for bit, the header naming srun;
#  2. `srun -n 3` the same (three processes of one device);
#  3. `srun --kill-on-bad-exit=0 -n 3 ... --on_process_loss=regroup`, one
#     task killed (SIGKILL): the other two regroup, finish, and end with
#     the parameters of one process, bit for bit.
# Needs root (the daemons); elsewhere it says so and passes.
# Args: the lenet_scratch binary.
set -euo pipefail

lenet="$(realpath "$1")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${TEST_TMPDIR:-$(mktemp -d)}"
unset XML_OUTPUT_FILE TEST_PREMATURE_EXIT_FILE
fail() {
  echo "FAIL: $*"
  exit 1
}
if ((EUID != 0)); then
  echo "not root: a Slurm cluster cannot be started here; nothing tested"
  exit 0
fi
for tool in slurmctld slurmd srun munged; do
  command -v "$tool" >/dev/null ||
    fail "$tool not found: install slurm-wlm and munge (./bazelw does)"
done

# munge: Slurm's authentication, one daemon per host (one already running
# is used and kept; one started here is stopped at the end).
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
[[ -f /etc/munge/munge.key ]] || head -c 1024 /dev/urandom >/etc/munge/munge.key
chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge
chmod 400 /etc/munge/munge.key
started_munge=0
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  munged --force
  started_munge=1
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}
# A short path: slurmd's Unix sockets in its spool folder must fit in 108
# bytes, which Bazel's test folders do not.
dir="$(mktemp -d /tmp/ringlet_slurm.XXXXXX)"
mkdir -p "$dir"/{state,spool,log}
host="$(hostname -s)"
cat >"$dir/slurm.conf" <<CONF
ClusterName=ringlet_test
SlurmctldHost=$host
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:16
CONF
export SLURM_CONF="$dir/slurm.conf"
# This cluster's daemons, by the configuration they were started with.
stop_cluster() {
  pkill -f "slurmd -f $SLURM_CONF" 2>/dev/null || true
  pkill -f "slurmctld -f $SLURM_CONF" 2>/dev/null || true
  # They save their state as they go: gone before the folder is.
  for _ in $(seq 50); do
    pgrep -f "slurm(ctl)?d -f $SLURM_CONF" >/dev/null || break
    sleep 0.1
  done
  ((started_munge == 0)) || pkill -x munged 2>/dev/null || true
  # Logs kept beside the test's outputs, the rest removed.
  cp -r "$dir/log" "$out/slurm_logs" 2>/dev/null || true
  rm -rf "$dir" 2>/dev/null || true
}
trap stop_cluster EXIT
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o %t | grep -q idle ||
  fail "Slurm did not come up: $(tail -n 5 "$dir"/log/*.log)"

common=(--reproducible --epochs=1 --limit=2000 --test_limit=200 --seed=5)
"$lenet" --devices=cpu:1 "${common[@]}" --params_out="$out/one.bin" >/dev/null 2>&1
values() { python3 "$root/tools/params_hash.py" "$1"; }
for n in 2 3; do
  # --overcommit: more tasks than this machine's 2 cores.
  timeout 300 srun --overcommit -n "$n" "$lenet" --devices=cpu:1 "${common[@]}" \
    --params_out="$out/srun$n.bin" >"$out/srun$n.txt" 2>&1 ||
    fail "srun -n $n failed: $(tail -n 10 "$out/srun$n.txt")"
  grep -q "^lenet_scratch on $n processes x \[cpu:0\] (srun)" "$out/srun$n.txt" ||
    fail "srun -n $n: the header does not name srun: $(head -c 300 "$out/srun$n.txt")"
  [[ "$(values "$out/one.bin")" == "$(values "$out/srun$n.bin")" ]] ||
    fail "srun -n $n: the parameters differ from one process's"
  echo "srun -n $n: $(values "$out/srun$n.bin"), the same as one process"
done

# 3. srun --kill-on-bad-exit=0 leaves the others running when a task dies:
# with --on_process_loss=regroup they go on without it.
long=(--reproducible --epochs=2 --limit=12000 --test_limit=200 --seed=5)
"$lenet" --devices=cpu:1 "${long[@]}" --params_out="$out/long.bin" >/dev/null 2>&1
timeout 300 srun --overcommit --kill-on-bad-exit=0 -n 3 "$lenet" \
  --devices=cpu:1 "${long[@]}" --on_process_loss=regroup \
  --params_out="$out/regrouped.bin" >"$out/regrouped.txt" 2>&1 &
job=$!
for _ in $(seq 600); do
  grep -q '^lenet_scratch on 3 processes' "$out/regrouped.txt" 2>/dev/null && break
  sleep 0.05
done
sleep 0.5
victim=""
for pid in $(pgrep -f -- "--params_out=$out/regrouped.bin"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'SLURM_PROCID=2'; then
    victim="$pid"
  fi
done
[[ -n "$victim" ]] || { kill "$job"; fail "no task of SLURM_PROCID 2 to kill: $(tail -n 3 "$out/regrouped.txt")"; }
kill -KILL "$victim"
wait "$job" || true # srun reports the killed task's end.
grep -o 'regrouped: 2 of 3 processes.*' "$out/regrouped.txt" ||
  fail "srun --kill-on-bad-exit=0: no regroup: $(tail -n 10 "$out/regrouped.txt")"
grep -q 'test acc: .* on 2 processes x \[cpu:0\] (srun)' "$out/regrouped.txt" ||
  fail "the 2 survivors did not finish: $(tail -n 5 "$out/regrouped.txt")"
[[ "$(values "$out/long.bin")" == "$(values "$out/regrouped.bin")" ]] ||
  fail "srun, a task killed: the parameters differ from one process's"
echo "srun -n 3, a task killed: the survivors regrouped, the same as one process"
echo "PASS"
