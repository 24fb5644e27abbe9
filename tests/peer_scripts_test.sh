#!/usr/bin/env bash
# The README's results commands that run a peer must run from a fresh clone:
# each script at a tiny size, with the binaries this build made. A script
# that breaks (a moved file, a changed flag) fails here, not in front of a
# user. PyTorch 1.13 is Debian's python3-torch (./bazelw installs it).
#   compare_ddp.py          trainers beside PyTorch DDP (gloo), and
#                           --reproducible beside the default
#   compare_train_bench.py  one training step beside PyTorch
#   compare_allreduce.py    ring and naive beside MPI_Allreduce (mpirun)
#   goodput.py              torchrun restarts with workers killed, beside
#                           PyTorch DDP resuming its own checkpoints
# Args: lenet_scratch, train_bench, allreduce_bench, mpi_allreduce_bench.
set -uo pipefail

lenet="$1"
train_bench="$2"
allreduce_bench="$3"
mpi_allreduce_bench="$4"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
export HOME="${TEST_TMPDIR:-/tmp}"  # OpenMPI and PyTorch want one.
unset XML_OUTPUT_FILE TEST_PREMATURE_EXIT_FILE

/usr/bin/python3 -c "import torch" 2>/dev/null ||
  { echo "python3-torch is not installed (./bazelw installs it)" >&2; exit 1; }

# Each prints a markdown table with a row per model and a ratio column.
out="$(timeout 600 /usr/bin/python3 "$root/trainers/bench/compare_ddp.py" \
  --bin_dir="$(dirname "$(realpath "$lenet")")" --models=lenet \
  --rounds=1 --lenet_steps=3 --reproducible 2>&1)" ||
  fail "compare_ddp.py: exit $?: $out"
[[ "$out" == *"| lenet | 2 | 256 |"*"x |"* &&
  "$out" == *"--reproducible"*"of the default"* ]] ||
  fail "compare_ddp.py printed no LeNet rows beside PyTorch: $out"

out="$(timeout 600 /usr/bin/python3 "$root/nn/bench/compare_train_bench.py" \
  --bench="$train_bench" --models=lenet --batch_sizes=16 --threads=1 \
  --rounds=1 --lenet_steps=2 2>&1)" ||
  fail "compare_train_bench.py: exit $?: $out"
[[ "$out" == *"| LeNet | 16 | 1 | fp32 | "* ]] ||
  fail "compare_train_bench.py printed no LeNet row: $out"

out="$(timeout 600 /usr/bin/python3 \
  "$root/collectives/bench/compare_allreduce.py" --bench="$allreduce_bench" \
  --mpi_bench="$mpi_allreduce_bench" --ranks=2 --min_bytes=1K \
  --max_bytes=4K --iters=2 --repeat=1 2>&1)" ||
  fail "compare_allreduce.py: exit $?: $out"
[[ "$out" == *"4096"* ]] || fail "compare_allreduce.py printed no 4K row: $out"

out="$(timeout 600 /usr/bin/python3 "$root/trainers/bench/goodput.py" \
  --bin_dir="$(dirname "$(realpath "$lenet")")" --steps=30 \
  --kill_every_steps=15 --checkpoint_every=5 --max_kills=1 2>&1)" ||
  fail "goodput.py: exit $?: $out"
[[ "$out" == *"| ringlet lenet_scratch |"*"x |"*"| PyTorch 1.13 DDP (gloo) |"*"x |"* ]] ||
  fail "goodput.py printed no rows for both: $out"

echo "$failures failure(s)"
exit $((failures > 0))
