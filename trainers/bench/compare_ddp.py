#!/usr/bin/python3
"""ringlet's trainers beside PyTorch DistributedDataParallel (gloo), same
machine, same run, one thread per device:

  ./bazelw build //trainers:all && /usr/bin/python3 trainers/bench/compare_ddp.py

For each model: 1 device at half the batch and 2 devices at the full batch
(LeNet 128/256, ResNet-18 256/512, as the chapters run them), ringlet's
training images/s (from the trainer's --metrics_out, real Fashion-MNIST,
the second of two epochs of --*_steps steps: warm, as PyTorch's are)
and PyTorch DDP's (trainers/bench/ddp_bench_torch.py, random data in memory),
interleaved, best of --rounds. Scaling efficiency is 2 devices' throughput
over twice one device's at half the batch. With --reproducible, ringlet on
2 devices with --reproducible too, and its ratio to the default's. Prints
a Markdown table.
"""
import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETUPS = {
    # model: (trainer binary, global batch on 2 devices, lr per device)
    "lenet": ("lenet_scratch", 256, 0.2),
    "resnet18": ("resnet_dp", 512, 0.1),
}


def ringlet(bin_dir, binary, devices, batch, lr, steps, extra=()):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as metrics:
        subprocess.run(
            [os.path.join(bin_dir, binary),
             f"--devices=cpu:{devices}", "--threads_per_device=1",
             f"--batch_size={batch}", f"--lr={lr}", "--epochs=2",
             f"--limit={batch * steps}", "--test_limit=64",
             f"--metrics_out={metrics.name}", *extra],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The first line describes the run ({"run": ...}); then the epochs.
        # The second epoch's: the first pays for first-touch memory and
        # oneDNN's kernel generation, as PyTorch's untimed --warmup step does.
        epochs = [json.loads(line) for line in open(metrics.name)
                  if line.startswith('{"epoch"')]
        return epochs[1]["images_per_sec"]


def pytorch(model, procs, batch, steps):
    out = subprocess.run(
        ["/usr/bin/python3", os.path.join(ROOT, "trainers", "bench", "ddp_bench_torch.py"),
         f"--model={model}", f"--procs={procs}", "--threads=1",
         f"--batch_size={batch}", f"--steps={steps}", "--warmup=1"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["images_per_sec"]


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--models", default="lenet,resnet18",
                        help="comma-separated: lenet, resnet18")
    parser.add_argument("--rounds", type=int, default=2,
                        help="interleaved rounds; the best is kept")
    parser.add_argument("--lenet_steps", type=int, default=60,
                        help="timed LeNet steps per run")
    parser.add_argument("--resnet_steps", type=int, default=3,
                        help="timed ResNet-18 steps per run")
    parser.add_argument("--bin_dir", default=os.path.join(ROOT, "bazel-bin", "trainers"),
                        help="where the trainer binaries are (another build's copy)")
    parser.add_argument("--reproducible", action="store_true",
                        help="also ringlet --reproducible on 2 devices")
    parser.add_argument("--ringlet_only", action="store_true",
                        help="skip PyTorch (python3-torch not installed)")
    args = parser.parse_args()
    print("| model | devices | batch | ringlet img/s | PyTorch DDP img/s | ratio |")
    print("|---|---|---|---|---|---|")
    for model in args.models.split(","):
        binary, batch2, lr = SETUPS[model]
        steps = args.lenet_steps if model == "lenet" else args.resnet_steps
        best = {}
        for _ in range(args.rounds):
            for devices in (1, 2):
                batch = batch2 * devices // 2
                lr_here = lr if model == "lenet" else lr * devices
                runs = [("ringlet", lambda: ringlet(args.bin_dir, binary, devices,
                                                    batch, lr_here, steps))]
                if not args.ringlet_only:
                    runs.append(("pytorch", lambda: pytorch(model, devices,
                                                            batch, steps)))
                for name, run in runs:
                    key = (name, devices)
                    best[key] = max(best.get(key, 0), run())
                if args.reproducible and devices == 2:
                    key = ("reproducible", 2)
                    best[key] = max(best.get(key, 0), ringlet(
                        args.bin_dir, binary, devices, batch, lr_here, steps,
                        ["--reproducible"]))
        for devices in (1, 2):
            ours, theirs = best[("ringlet", devices)], best.get(("pytorch", devices))
            ratio = f"{ours / theirs:.2f}x" if theirs else "-"
            theirs = f"{theirs:,.0f}" if theirs else "-"
            print(f"| {model} | {devices} | {batch2 * devices // 2} | "
                  f"{ours:,.0f} | {theirs} | {ratio} |")
        if args.reproducible:
            ours = best[("reproducible", 2)]
            print(f"| {model} | 2, --reproducible | {batch2} | {ours:,.0f} | "
                  f"| {ours / best[('ringlet', 2)]:.2f}x of the default |")
        for name in ("ringlet",) if args.ringlet_only else ("ringlet", "pytorch"):
            eff = best[(name, 2)] / (2 * best[(name, 1)])
            print(f"| {model} | scaling efficiency, {name} | | "
                  f"{eff:.2f} | | |")


if __name__ == "__main__":
    main()
