#!/usr/bin/python3
"""The same training step as //nn/bench:train_bench, in PyTorch, for comparison.

  /usr/bin/python3 nn/bench/train_bench_torch.py --model=resnet18 --batch_size=256 --threads=1
  python3 nn/bench/train_bench_torch.py --device=cuda --model=resnet18 --precision=fp32

Needs PyTorch (Debian's python3-torch 1.13 for the CPU; on a GPU machine
any CUDA build); ringlet itself does not. On a GPU: fp32 with TF32 off by
default (--precision=tf32 allows it for convolutions and matrix products),
cudnn.benchmark on unless --no_cudnn_benchmark, time between two
torch.cuda.synchronize() calls; --cuda_graph captures the whole step as
PyTorch's documentation does (warmup on a side stream, gradients set to
None before capture) and replays it.
The models are d2l's, built as the chapters build them: the from-scratch
LeNet (conv 20@3x3, avg-pool, conv 50@5x5, avg-pool, 800-128-10, ReLU) and
ResNet-18 for 1x28x28 input; SGD, lr 0.1, mean cross-entropy, random data.
Prints one JSON object with the keys train_bench --json prints.
"""
import argparse
import json
import resource
import time

import os
import sys

import torch
from torch import nn

# The models the trainers write parameters for: trainers/torch_models.py,
# or beside this file (the GPU bundle).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "trainers")]
from torch_models import resnet18  # noqa: E402


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 20, 3), nn.ReLU(), nn.AvgPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.AvgPool2d(2, 2), nn.Flatten(),
        nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", choices=["lenet", "resnet18"], default="lenet")
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--precision", choices=["fp32", "tf32", "bf16"],
                        default="fp32",
                        help="on a GPU: tf32 lets convolutions and matrix "
                        "products use TF32; bf16: torch.autocast with "
                        "bfloat16 (CPU or GPU), as train_bench --precision=bf16")
    parser.add_argument("--channels_last", action="store_true",
                        help="model and images in channels-last memory "
                        "format (what cuDNN's tensor-core kernels want)")
    parser.add_argument("--compile", action="store_true",
                        help="torch.compile the model (PyTorch 2)")
    parser.add_argument("--no_cudnn_benchmark", action="store_true",
                        help="on a GPU: cuDNN's heuristics instead of timing "
                        "the algorithms once per shape")
    parser.add_argument("--cuda_graph", action="store_true",
                        help="on a GPU: capture one step as a CUDA graph "
                        "after the warmup and replay it")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda:
        tf32 = args.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = not args.no_cudnn_benchmark
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    net = (lenet() if args.model == "lenet" else resnet18()).to(device)
    layout = torch.channels_last if args.channels_last else torch.contiguous_format
    net = net.to(memory_format=layout)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    if args.compile:
        net = torch.compile(net)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(args.batch_size, 1, 28, 28).to(device).contiguous(
        memory_format=layout)
    y = torch.randint(0, 10, (args.batch_size,)).to(device)

    bf16 = args.precision == "bf16"

    def step():
        opt.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()

    if args.cuda_graph:
        if not cuda:
            parser.error("--cuda_graph needs --device=cuda")
        if bf16:
            parser.error("--cuda_graph captures a float32 step; leave "
                         "--precision=bf16 out")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(max(args.warmup, 3)):
                opt.zero_grad(set_to_none=True)
                loss_fn(net(x), y).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            loss_fn(net(x), y).backward()
            opt.step()
        step = graph.replay
    for _ in range(args.warmup):
        step()
    sync()
    # As train_bench: the host's time to queue one step with the device
    # idle, and that step alone (best of 3).
    host_ms = isolated_ms = None
    if cuda:
        for _ in range(3):
            t0 = time.perf_counter()
            step()
            t1 = time.perf_counter()
            sync()
            t2 = time.perf_counter()
            queued, done = 1e3 * (t1 - t0), 1e3 * (t2 - t0)
            host_ms = queued if host_ms is None else min(host_ms, queued)
            isolated_ms = done if isolated_ms is None else min(isolated_ms, done)
    # Only the timed steps for `ncu --profile-from-start off` (as
    # train_bench's gpu::StartProfiling); nothing without a profiler.
    if cuda:
        # As train_bench's gpu_peak_bytes: the timed steps alone.
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.profiler.start()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    sync()
    seconds = time.perf_counter() - start
    if cuda:
        torch.cuda.profiler.stop()
    print(json.dumps({
        "model": args.model, "device": str(device),
        "precision": args.precision if cuda or bf16 else "fp32",
        "batch_size": args.batch_size,
        "threads": args.threads, "framework": "pytorch " + torch.__version__,
        "cuda_graph": args.cuda_graph,
        "channels_last": args.channels_last, "compiled": args.compile,
        "images_per_sec": round(args.batch_size * args.steps / seconds, 2),
        "step_ms": round(1e3 * seconds / args.steps, 3),
        "host_ms_per_step": None if host_ms is None else round(host_ms, 3),
        "isolated_step_ms": None if isolated_ms is None else round(isolated_ms, 3),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "gpu_peak_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "gpu_held_bytes": torch.cuda.memory_reserved() if cuda else None,
    }))


if __name__ == "__main__":
    main()
