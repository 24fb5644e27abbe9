#!/usr/bin/env bash
# Checks --reproducible's promise: trains a few steps of both trainers on
# 1, 2, 3 and 4 CPU devices, under mpirun with 2 and 3 processes (shared
# memory, and TCP only as two hosts would), under torchrun with 2 and 3
# processes (ringlet's own TCP transport, no MPI), and resumed from a checkpoint onto
# another device count, and prints each run's parameter hash (SHA-256 of
# the --params_out file's values). Exits 1 when any hash of a setting
# differs from its first run's, or when runs without --reproducible on 1
# and 3 devices agree (the control: then it could not tell runs apart).
#
#   tools/check_reproducible.sh [LENET_SCRATCH RESNET_DP]
#
# Binaries default to bazel-bin/trainers/ (./bazelw build //trainers:all).
# Data: the installed Fashion-MNIST ($FASHION_MNIST_DIR, else Debian's
# dataset-fashion-mnist). mpirun (openmpi-bin) and torchrun (python3-torch)
# are skipped, with a line saying so, where they are missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lenet="$(realpath "${1:-$here/bazel-bin/trainers/lenet_scratch}")"
resnet="$(realpath "${2:-$here/bazel-bin/trainers/resnet_dp}")"
for b in "$lenet" "$resnet"; do
  [[ -x "$b" ]] || {
    echo "check_reproducible: no trainer at $b; build it with" \
      "./bazelw build //trainers:all, or name it" >&2
    exit 2
  }
done
out="$(mktemp -d "${TEST_TMPDIR:-/tmp}/check_reproducible.XXXXXX")"
trap 'rm -rf "$out"' EXIT
export HOME="${HOME:-$out}"  # OpenMPI wants a home folder.
unset XML_OUTPUT_FILE TEST_PREMATURE_EXIT_FILE
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

mpi=()
if command -v mpirun >/dev/null; then
  mpi=(mpirun --oversubscribe --bind-to none)
  if ((EUID == 0)); then mpi+=(--allow-run-as-root); fi
fi

# torchrun 1.13 on Python 3.11 fails at start unless --redirects and --tee
# name one stream each (an IntFlag change in 3.11: 3, both, fails too); 2
# keeps stderr in torchrun's own log folder and on its terminal. Not
# --standalone: 1.13's puts its store on port 29400, so a second job uses
# the first's and fails to restart once the first has ended; localhost:0 is
# a port of torchrun's choosing.
torchrun=()
if command -v torchrun >/dev/null; then
  torchrun=(torchrun --rdzv_backend=c10d --rdzv_endpoint=localhost:0
    --nnodes=1 --no_python --redirects=2 --tee=2)
fi

# hash <params file>: its parameter hash (tools/params_hash.py).
hash() { python3 "$here/tools/params_hash.py" "$1"; }

failed=0
# check <name> <binary> <flags...>: the runs of one setting, hashes compared.
check() {
  local name="$1" bin="$2"
  shift 2
  local common=(--reproducible --epochs=1 --seed=3 --replica_check_every=1 "$@")
  local first="" runs=()
  local d
  for d in 1 2 3 4; do runs+=("cpu:$d|--devices=cpu:$d"); done
  if ((${#mpi[@]})); then
    runs+=("mpirun 2 x cpu:1|mpi2|--devices=cpu:1")
    runs+=("mpirun 3 x cpu:1|mpi3|--devices=cpu:1")
    runs+=("mpirun 2 x cpu:2 tcp|mpitcp|--devices=cpu:2")
  fi
  if ((${#torchrun[@]})); then
    runs+=("torchrun 2 x cpu:1|torchrun2|--devices=cpu:1")
    runs+=("torchrun 3 x cpu:1|torchrun3|--devices=cpu:1")
  fi
  local run label how
  for run in "${runs[@]}"; do
    IFS='|' read -r label how rest <<<"$run"
    local file="$out/$name-${label//[^a-z0-9]/_}.params"
    local cmd=("$bin" "${common[@]}" --params_out="$file")
    case "$how" in
      mpi2) cmd=("${mpi[@]}" -np 2 "${cmd[@]}" "$rest") ;;
      mpi3) cmd=("${mpi[@]}" -np 3 "${cmd[@]}" "$rest") ;;
      mpitcp)
        cmd=("${mpi[@]}" -np 2 --mca btl tcp,self "${cmd[@]}" "$rest")
        ;;
      torchrun2) cmd=("${torchrun[@]}" --nproc_per_node=2 "${cmd[@]}" "$rest") ;;
      torchrun3) cmd=("${torchrun[@]}" --nproc_per_node=3 "${cmd[@]}" "$rest") ;;
      *) cmd+=("$how") ;;
    esac
    if ! "${cmd[@]}" >"$out/log" 2>&1; then
      echo "FAILED to run: ${cmd[*]}" >&2
      tail -5 "$out/log" >&2
      failed=1
      continue
    fi
    local h
    h="$(hash "$file")"
    first="${first:-$h}"
    local verdict="same"
    [[ "$h" == "$first" ]] || { verdict="DIFFERS"; failed=1; }
    printf '%-34s %-22s %s %s\n' "$name" "$label" "$h" "$verdict"
  done
  [[ ${#mpi[@]} -gt 0 ]] ||
    printf '%-34s %-22s %s\n' "$name" "mpirun" "skipped: no mpirun here"
  [[ ${#torchrun[@]} -gt 0 ]] ||
    printf '%-34s %-22s %s\n' "$name" "torchrun" "skipped: no torchrun here"
}

# resume <name> <binary> <flags...>: 2 epochs on 1 device against 1 epoch on
# 3 devices resumed for the second on 2.
resume() {
  local name="$1" bin="$2"
  shift 2
  local common=(--reproducible --seed=3 "$@")
  "$bin" "${common[@]}" --devices=cpu:1 --epochs=2 \
    --params_out="$out/$name-whole.params" >"$out/log" 2>&1 || failed=1
  "$bin" "${common[@]}" --devices=cpu:3 --epochs=1 \
    --checkpoint_dir="$out/$name-ckpt" >"$out/log" 2>&1 || failed=1
  "$bin" "${common[@]}" --devices=cpu:2 --epochs=2 --resume \
    --checkpoint_dir="$out/$name-ckpt" --params_out="$out/$name-resumed.params" \
    >"$out/log" 2>&1 || { failed=1; tail -3 "$out/log" >&2; }
  # The checkpoint records the setting: resuming it without --reproducible
  # (another trajectory) is refused, naming it.
  local args=("$@")
  if "$bin" "${args[@]}" --seed=3 --devices=cpu:2 --epochs=2 --resume \
    --checkpoint_dir="$out/$name-ckpt" >"$out/log" 2>&1 ||
    ! grep -q "was written with reproducible" "$out/log"; then
    echo "$name: resuming without --reproducible was not refused:" >&2
    tail -2 "$out/log" >&2
    failed=1
  fi
  local a b verdict=same
  a="$(hash "$out/$name-whole.params")"
  b="$(hash "$out/$name-resumed.params" 2>/dev/null || echo missing)"
  [[ "$a" == "$b" ]] || { verdict=DIFFERS; failed=1; }
  printf '%-34s %-22s %s %s\n' "$name" "cpu:1, 2 epochs" "$a" ""
  printf '%-34s %-22s %s %s\n' "$name" "cpu:3 then cpu:2" "$b" "$verdict"
}

echo "# setting                          run                    params hash"
lenet_data=(--limit=1500 --test_limit=300)
check lenet_sgd_momentum_clip_accum "$lenet" "${lenet_data[@]}" \
  --momentum=0.9 --weight_decay=1e-4 --clip_grad_norm=1 --accumulate_steps=2
check lenet_adamw_bf16_wire "$lenet" "${lenet_data[@]}" --optimizer=adamw \
  --grad_dtype=bf16 --micro_shards=6
resnet_data=(--limit=160 --test_limit=64 --batch_size=64)
check resnet_sgd_momentum "$resnet" "${resnet_data[@]}" --momentum=0.9 \
  --weight_decay=5e-4
resume lenet_resume "$lenet" "${lenet_data[@]}" --momentum=0.9
resume resnet_resume "$resnet" --limit=128 --test_limit=64 --batch_size=64
# The control: without --reproducible, 1 and 3 devices part ways (else this
# check could not tell runs apart).
"$lenet" "${lenet_data[@]}" --epochs=1 --seed=3 --devices=cpu:1 \
  --params_out="$out/plain1.params" >"$out/log" 2>&1 || failed=1
"$lenet" "${lenet_data[@]}" --epochs=1 --seed=3 --devices=cpu:3 \
  --params_out="$out/plain3.params" >"$out/log" 2>&1 || failed=1
plain1="$(hash "$out/plain1.params")" plain3="$(hash "$out/plain3.params")"
printf '%-34s %-22s %s\n' "lenet_without_reproducible" "cpu:1" "$plain1"
printf '%-34s %-22s %s %s\n' "lenet_without_reproducible" "cpu:3" "$plain3" \
  "$([[ "$plain1" != "$plain3" ]] && echo "differs, as expected" || echo "SAME")"
if [[ "$plain1" == "$plain3" ]]; then
  echo "check_reproducible: runs without --reproducible gave the same hash" \
    "on 1 and 3 devices; this check cannot tell runs apart" >&2
  failed=1
fi
if ((failed)); then
  echo "check_reproducible: some runs differ or failed (above)" >&2
  exit 1
fi
echo "check_reproducible: every setting gave the same parameters on every run"
