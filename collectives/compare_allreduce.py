#!/usr/bin/env python3
"""Runs ring, naive and MPI_Allreduce side by side and prints one table.

  ./bazelw run //collectives:compare_allreduce -- --ranks=2 --max_bytes=256M

Each backend runs with the same ranks, sizes and iterations, one after the
other in the same sitting, so the ratios compare like with like. MPI runs as
processes under mpirun (OpenMPI's openmpi-bin); skipped if mpirun is absent.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {row["bytes"]: row for row in map(json.loads, out.splitlines())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--min_bytes", default="4")
    parser.add_argument("--max_bytes", default="256M")
    parser.add_argument("--factor", default="4")
    parser.add_argument("--iters", default="20")
    parser.add_argument("--bench", required=True, help=argparse.SUPPRESS)
    parser.add_argument("--mpi_bench", required=True, help=argparse.SUPPRESS)
    args = parser.parse_args()

    sweep = ["--min_bytes", args.min_bytes, "--max_bytes", args.max_bytes,
             "--factor", args.factor, "--iters", args.iters, "--json"]
    results = {}
    for backend in ("ring", "naive"):
        results[backend] = run([args.bench, "--backend", backend, "--ranks",
                                str(args.ranks)] + sweep)
    mpirun = shutil.which("mpirun")
    if mpirun:
        cmd = [mpirun, "-np", str(args.ranks)]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if args.ranks > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
        results["mpi"] = run(cmd + [args.mpi_bench] + sweep)

    names = list(results)
    print(f"# allreduce float32 sum, {args.ranks} ranks, busbw in GB/s")
    header = f"{'bytes':>12}" + "".join(f" {n:>8}" for n in names)
    header += f" {'ring/naive':>10}"
    if "mpi" in results:
        header += f" {'ring/mpi':>9}"
    header += f" {'ring sent':>12} {'naive sent':>12} {'#wrong':>6}"
    print(header)
    for size in sorted(results["ring"]):
        rows = {n: results[n][size] for n in names}
        line = f"{size:>12}" + "".join(
            f" {rows[n]['busbw_gbps']:>8.3f}" for n in names)
        ratio = lambda a, b: rows[a]["busbw_gbps"] / max(rows[b]["busbw_gbps"], 1e-12)
        line += f" {ratio('ring', 'naive'):>10.2f}"
        if "mpi" in rows:
            line += f" {ratio('ring', 'mpi'):>9.2f}"
        wrong = sum(rows[n]["wrong"] for n in names)
        line += (f" {rows['ring']['bytes_sent_per_rank']:>12}"
                 f" {rows['naive']['bytes_sent_per_rank']:>12} {wrong:>6}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
