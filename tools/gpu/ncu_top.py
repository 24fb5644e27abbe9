#!/usr/bin/env python3
"""Summarises an Nsight Compute CSV (ncu --csv --metrics gpu__time_duration.sum)
as the kernels that took the most time, grouped by name.

  ncu --profile-from-start off --metrics gpu__time_duration.sum --csv \\
      nn/bench/train_bench --device=cuda:0 --steps=1 --warmup=3 > step.csv
  python3 tools/gpu/ncu_top.py step.csv --top=12

Prints a table (kernel, launches, microseconds, share of the total) and,
last, one JSON line with the same numbers for scripts. Lines that are not
CSV rows (ncu's ==PROF== messages, the program's own output) are skipped.
"""
import argparse
import csv
import json
import sys

# ncu's time units, in nanoseconds.
UNITS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3,
         "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


def short_name(name):
    """The kernel's name without 'void ', its arguments and long templates."""
    name = name.strip()
    if name.startswith("void "):
        name = name[len("void "):]
    if name.endswith(")"):  # The argument list: up to its matching "(".
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i].rstrip()
                break
    if len(name) > 90:
        name = name[:87] + "..."
    return name


def read_kernel_times(lines):
    """{short name: [launches, nanoseconds]} from ncu's CSV lines."""
    rows = csv.reader(line for line in lines if line.startswith('"'))
    header = next(rows, None)
    if header is None:
        raise ValueError("no CSV rows (was ncu run with --csv?)")
    try:
        name_col = header.index("Kernel Name")
        metric_col = header.index("Metric Name")
        unit_col = header.index("Metric Unit")
        value_col = header.index("Metric Value")
    except ValueError as e:
        raise ValueError(f"not an ncu CSV header: {e}") from None
    kernels = {}
    for row in rows:
        if len(row) <= value_col or row[metric_col] != "gpu__time_duration.sum":
            continue
        unit = row[unit_col].strip()
        if unit not in UNITS:
            raise ValueError(f"unknown time unit '{unit}'")
        value = float(row[value_col].replace(",", "")) * UNITS[unit]
        entry = kernels.setdefault(short_name(row[name_col]), [0, 0.0])
        entry[0] += 1
        entry[1] += value
    if not kernels:
        raise ValueError("no gpu__time_duration.sum rows")
    return kernels


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv_file", help="ncu's CSV output ('-' for stdin)")
    parser.add_argument("--top", type=int, default=12,
                        help="how many kernels to list")
    parser.add_argument("--label", default="",
                        help="a name for the JSON line (e.g. the program)")
    args = parser.parse_args()
    try:
        source = sys.stdin if args.csv_file == "-" else open(args.csv_file)
        with source:
            kernels = read_kernel_times(source)
    except (OSError, ValueError) as e:
        print(f"ncu_top: {args.csv_file}: {e}", file=sys.stderr)
        return 1
    total = sum(ns for _, ns in kernels.values())
    launches = sum(n for n, _ in kernels.values())
    ranked = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:args.top]
    print(f"{'kernel':<90} {'launches':>8} {'us':>10} {'share':>6}")
    for name, (count, ns) in ranked:
        print(f"{name:<90} {count:>8} {ns / 1e3:>10.1f} {ns / total:>6.1%}")
    print(f"{'all ' + str(len(kernels)) + ' kernels':<90} {launches:>8} "
          f"{total / 1e3:>10.1f} {1:>6.1%}")
    print(json.dumps({
        "label": args.label, "kernel_us": round(total / 1e3, 1),
        "launches": launches,
        "top": [{"kernel": name, "launches": count, "us": round(ns / 1e3, 1)}
                for name, (count, ns) in ranked]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
