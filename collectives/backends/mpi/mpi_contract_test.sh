#!/usr/bin/env bash
# Runs a test binary as the processes of one mpirun job:
#   mpi_contract_test.sh <processes> <binary> [args...]
# Every process runs the same gtest cases in the same order; the job fails
# when any process fails. RINGLET_MPIRUN_FLAGS adds mpirun flags ("--mca btl
# tcp,self": no shared memory, the path two hosts would take). Ends non-zero with a message when mpirun is
# missing (./bazelw installs openmpi-bin).
set -euo pipefail
processes="$1"
shift
if ! command -v mpirun >/dev/null; then
  echo "mpirun not found: install openmpi-bin (./bazelw does)" >&2
  exit 1
fi
read -ra extra <<<"${RINGLET_MPIRUN_FLAGS:-}"
flags=(-np "$processes" --oversubscribe --bind-to none "${extra[@]}")
if ((EUID == 0)); then flags+=(--allow-run-as-root); fi
# One XML file per process would clobber Bazel's; gtest prints to the log.
unset XML_OUTPUT_FILE GTEST_OUTPUT TEST_PREMATURE_EXIT_FILE
# Bazel's sandbox has no home folder; OpenMPI wants somewhere to write.
export HOME="${TEST_TMPDIR:-/tmp}"
# Under --config=asan, OpenMPI's own allocations (in plugins it unloads at
# MPI_Finalize, so LeakSanitizer sees "<unknown module>" frames no
# suppression can name) fail every process: no leak check in the processes
# mpirun starts. ASan's other checks stay on; leaks in ringlet's code are
# caught by the tests that run without mpirun.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
exec timeout --signal=KILL 600 mpirun "${flags[@]}" "$@"
