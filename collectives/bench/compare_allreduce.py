#!/usr/bin/env python3
"""Runs ring, naive and MPI_Allreduce side by side and prints one table.

  ./bazelw run //collectives/bench:compare_allreduce -- --ranks=2 --max_bytes=256M

Every backend runs with the same ranks, sizes and calls. The machine's
speed drifts from minute to minute (a virtual machine's cores move), so the
backends take turns size by size, each size --repeat times, and the best
time of each backend counts: ratios compare runs made seconds apart. MPI
runs as processes under mpirun (OpenMPI's openmpi-bin), and so do ringlet's
ring across processes (ring-mp: the same ring algorithm over MPI messages)
and its mpi backend (mpi-be); skipped if mpirun is absent.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


COLUMNS = """columns (busbw in GB/s, nccl-tests' bus bandwidth: algbw x 2(n-1)/n):
  bytes        message size of each rank
  ring         ringlet's ring allreduce, ranks as threads of one process
  naive        ringlet's reduce-to-one-then-broadcast, threads of one process
  mpi          OpenMPI's MPI_Allreduce, one process per rank (mpirun)
  ring-mp      ringlet's ring over MPI messages, one process per rank
  mpi-be       ringlet's mpi backend (MPI_Allreduce behind ringlet's API),
               one process per rank
  ring/naive   ring's busbw over naive's
  ring/mpi     ring's busbw over mpi's (above 1: ringlet is faster)
  ring-mp/mpi  ring-mp's busbw over mpi's (the same processes and wire)
  ring sent    bytes each ring rank sent (2(n-1)/n of the message)
  naive sent   bytes the naive root sent ((n-1) times the message)
  #wrong       elements that differed from the expected sum, all backends
The MPI columns are left out where mpirun is absent."""


class Formatter(argparse.ArgumentDefaultsHelpFormatter,
                argparse.RawDescriptionHelpFormatter):
    """Defaults in --help, and the column list as written."""


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    # allreduce_bench gives out-of-place and in-place rows; compare the
    # out-of-place ones (MPI's bench has only those).
    return [r for r in rows if not r.get("in_place", False)]


def sizes(lo, hi, factor):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    parse = lambda t: int(t[:-1]) * units[t[-1].upper()] if t[-1].isalpha() else int(t)
    out, b = [], parse(lo)
    while b <= parse(hi):
        out.append(b)
        b *= factor
    return out


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=COLUMNS,
        formatter_class=Formatter)
    parser.add_argument("--ranks", type=int, default=2,
                        help="ranks (threads, or processes for MPI)")
    parser.add_argument("--min_bytes", default="4",
                        help="smallest size (K, M, G)")
    parser.add_argument("--max_bytes", default="256M",
                        help="largest size (K, M, G)")
    parser.add_argument("--factor", default="4",
                        help="size multiplier between rows")
    parser.add_argument("--iters", default="20",
                        help="timed calls per row (at least)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per backend and size; the best counts")
    parser.add_argument("--bench", required=True, help=argparse.SUPPRESS)
    parser.add_argument("--mpi_bench", required=True, help=argparse.SUPPRESS)
    args = parser.parse_args()

    commands = {
        backend: [args.bench, "--backend", backend, "--ranks", str(args.ranks)]
        for backend in ("ring", "naive")
    }
    mpirun = shutil.which("mpirun")
    if mpirun:
        cmd = [mpirun, "-np", str(args.ranks)]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if args.ranks > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
        commands["mpi"] = cmd + [args.mpi_bench]
        # ringlet across processes: the ring over MPI messages (ring-mp)
        # and the mpi backend (MPI_Iallreduce behind the call check).
        one_rank_each = ["--ranks", "1"]
        commands["ring-mp"] = cmd + [args.bench, "--backend", "ring"] + one_rank_each
        commands["mpi-be"] = cmd + [args.bench, "--backend", "mpi"] + one_rank_each

    results = {name: {} for name in commands}
    for size in sizes(args.min_bytes, args.max_bytes, int(args.factor)):
        sweep = ["--min_bytes", str(size), "--max_bytes", str(size),
                 "--iters", args.iters, "--json"]
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                (row,) = run(cmd + sweep)
                best = results[name].get(size)
                if best is None or row["time_us"] < best["time_us"]:
                    row["wrong"] += best["wrong"] if best else 0
                    results[name][size] = row
                elif row["wrong"]:
                    best["wrong"] += row["wrong"]

    names = list(results)
    print(f"# allreduce float32 sum, {args.ranks} ranks, busbw in GB/s "
          f"(best of {args.repeat})")
    header = f"{'bytes':>12}" + "".join(f" {n:>8}" for n in names)
    header += f" {'ring/naive':>10}"
    if "mpi" in results:
        header += f" {'ring/mpi':>9} {'ring-mp/mpi':>11}"
    header += f" {'ring sent':>12} {'naive sent':>12} {'#wrong':>6}"
    print(header)
    for size in sorted(results["ring"]):
        rows = {n: results[n][size] for n in names}
        line = f"{size:>12}" + "".join(
            f" {rows[n]['busbw_gbps']:>8.3f}" for n in names)
        ratio = lambda a, b: rows[a]["busbw_gbps"] / max(rows[b]["busbw_gbps"], 1e-12)
        line += f" {ratio('ring', 'naive'):>10.2f}"
        if "mpi" in rows:
            line += f" {ratio('ring', 'mpi'):>9.2f} {ratio('ring-mp', 'mpi'):>11.2f}"
        wrong = sum(rows[n]["wrong"] for n in names)
        line += (f" {rows['ring']['bytes_sent_per_rank']:>12}"
                 f" {rows['naive']['bytes_sent_per_rank']:>12} {wrong:>6}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
