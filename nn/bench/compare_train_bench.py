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
    parser.add_argument("--baseline", default="",
                        help="another build's train_bench, run interleaved "
                        "beside --bench: two columns more, its images/s and "
                        "--bench's over it (before against after a change)")
    parser.add_argument("--lenet_steps", type=int, default=30,
                        help="timed LeNet steps per run (after 3 warmup)")
    parser.add_argument("--resnet_steps", type=int, default=6,
                        help="timed ResNet-18 steps per run (after 2 warmup: "
                        "oneDNN's first-step setup must not count; 2 steps "
                        "after 1 read ringlet 25%% low on a Xeon)")
    args = parser.parse_args()
    extra = " baseline images/s | over baseline |" if args.baseline else ""
    print("| model | batch | threads | precision | ringlet images/s | "
          "PyTorch images/s | ratio | ringlet peak RSS | PyTorch peak RSS |"
          + extra)
    print("|---|---|---|---|---|---|---|---|---|" + ("---|---|" if extra else ""))
    for model in args.models.split(","):
        steps = ([f"--steps={args.lenet_steps}", "--warmup=3"] if model == "lenet"
                 else [f"--steps={args.resnet_steps}", "--warmup=2"])
        for batch in map(int, args.batch_sizes.split(",")):
            for threads, precision in [(t, p) for t in map(int, args.threads.split(","))
                                       for p in args.precisions.split(",")]:
                common = [f"--model={model}", f"--batch_size={batch}",
                          f"--threads={threads}", f"--precision={precision}"] + steps
                best = {}
                runs = [("ringlet", [args.bench, "--json"] + common),
                        ("pytorch", ["/usr/bin/python3",
                                     os.path.join(ROOT, "nn", "bench", "train_bench_torch.py")]
                         + common)]
                if args.baseline:
                    runs.append(("baseline", [args.baseline, "--json"] + common))
                for _ in range(args.rounds):
                    for name, command in runs:
                        result = run(command)
                        if result["images_per_sec"] > best.get(name, {}).get("images_per_sec", 0):
                            best[name] = result
                ours, theirs = best["ringlet"], best["pytorch"]
                mib = lambda r: f"{r['peak_rss_bytes'] / 2**20:,.0f} MiB"
                print(f"| {NAMES[model]} | {batch} | {threads} | {precision} | "
                      f"{ours['images_per_sec']:,.1f} | {theirs['images_per_sec']:,.1f} | "
                      f"{ours['images_per_sec'] / theirs['images_per_sec']:.2f} | "
                      f"{mib(ours)} | {mib(theirs)} |"
                      + (f" {best['baseline']['images_per_sec']:,.1f} | "
                         f"{ours['images_per_sec'] / best['baseline']['images_per_sec']:.2f} |"
                         if args.baseline else ""), flush=True)


if __name__ == "__main__":
    main()
