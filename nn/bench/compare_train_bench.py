#!/usr/bin/python3
"""//nn/bench:train_bench beside nn/bench/train_bench_torch.py (PyTorch), same machine,
same run, interleaved, best of --rounds; prints the README's Markdown table:

  ./bazelw build //nn/bench:train_bench && /usr/bin/python3 nn/bench/compare_train_bench.py

Each configuration runs in a fresh process, so peak RSS is that model's.
"""
import argparse
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = {"lenet": "LeNet", "resnet18": "ResNet-18"}


def run(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--models", default="lenet,resnet18",
                        help="comma-separated: lenet, resnet18")
    parser.add_argument("--batch_sizes", default="256,64",
                        help="comma-separated batch sizes")
    parser.add_argument("--threads", default="1,2",
                        help="comma-separated thread counts")
    parser.add_argument("--precisions", default="fp32",
                        help="comma-separated: fp32, bf16 (torch.autocast "
                        "beside ringlet's; CPUs with AVX512_BF16 or AMX)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="interleaved rounds; the best is kept")
    parser.add_argument("--bench", default=os.path.join(ROOT, "bazel-bin", "nn", "bench", "train_bench"),
                        help="the train_bench binary (another build's copy)")
    args = parser.parse_args()
    print("| model | batch | threads | precision | ringlet images/s | "
          "PyTorch images/s | ratio | ringlet peak RSS | PyTorch peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        steps = ["--steps=30", "--warmup=3"] if model == "lenet" else ["--steps=2", "--warmup=1"]
        for batch in map(int, args.batch_sizes.split(",")):
            for threads, precision in [(t, p) for t in map(int, args.threads.split(","))
                                       for p in args.precisions.split(",")]:
                common = [f"--model={model}", f"--batch_size={batch}",
                          f"--threads={threads}", f"--precision={precision}"] + steps
                best = {}
                for _ in range(args.rounds):
                    for name, command in (
                            ("ringlet", [args.bench, "--json"] + common),
                            ("pytorch", ["/usr/bin/python3",
                                         os.path.join(ROOT, "nn", "bench", "train_bench_torch.py")]
                             + common)):
                        result = run(command)
                        if result["images_per_sec"] > best.get(name, {}).get("images_per_sec", 0):
                            best[name] = result
                ours, theirs = best["ringlet"], best["pytorch"]
                mib = lambda r: f"{r['peak_rss_bytes'] / 2**20:,.0f} MiB"
                print(f"| {NAMES[model]} | {batch} | {threads} | {precision} | "
                      f"{ours['images_per_sec']:,.1f} | {theirs['images_per_sec']:,.1f} | "
                      f"{ours['images_per_sec'] / theirs['images_per_sec']:.2f} | "
                      f"{mib(ours)} | {mib(theirs)} |", flush=True)


if __name__ == "__main__":
    main()
