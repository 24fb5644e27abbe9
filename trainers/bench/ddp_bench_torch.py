#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo) on this machine, as the peer of
//trainers:lenet_scratch and //trainers:resnet_dp.

  /usr/bin/python3 trainers/bench/ddp_bench_torch.py --model=lenet --procs=2 --batch_size=256

Needs Debian's python3-torch (PyTorch 1.13, CPU); ringlet itself does not.
One process per device with --threads each, the global batch split evenly,
d2l's models (from nn/bench/train_bench_torch.py), plain SGD with the trainers'
learning rates (0.2 LeNet, 0.1 per device ResNet-18), mean cross-entropy,
Fashion-MNIST-shaped random data held in memory. Prints one JSON object:
model, procs, threads, batch_size, images_per_sec (training steps only,
after --warmup steps).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "nn", "bench"))
from train_bench_torch import lenet, resnet18  # noqa: E402


def worker(rank, args, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.procs)
    torch.manual_seed(0)
    net = lenet() if args.model == "lenet" else resnet18()
    model = nn.parallel.DistributedDataParallel(net)
    lr = 0.2 if args.model == "lenet" else 0.1 * args.procs
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    local = args.batch_size // args.procs
    x = torch.rand(local, 1, 28, 28)
    y = torch.randint(0, 10, (local,))

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        queue.put(args.batch_size * args.steps / seconds)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", choices=["lenet", "resnet18"], default="lenet")
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=256,
                        help="global batch, split over the processes")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--port", type=int, default=29533)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, queue), nprocs=args.procs, join=True)
    print(json.dumps({
        "model": args.model, "procs": args.procs, "threads": args.threads,
        "batch_size": args.batch_size, "framework": "pytorch " + torch.__version__,
        "images_per_sec": round(queue.get(), 2),
    }))


if __name__ == "__main__":
    main()
