#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo) that survives torchrun's restarts:
the peer of a ringlet trainer under `torchrun --max_restarts` with
--checkpoint_dir and --checkpoint_steps. Run by torchrun, one process per
device:

  torchrun --rdzv_backend=c10d --rdzv_endpoint=localhost:0 --nproc_per_node=2 \\
    --max_restarts=9 --redirects=2 --tee=2 \\
    trainers/bench/ddp_restart_torch.py --steps=200 --ckpt=DIR

d2l's LeNet (nn/bench/train_bench_torch.py), plain SGD (lr 0.2), the
global batch split over the processes, Fashion-MNIST-shaped random data
drawn from the step number (so a resumed run sees the batches it would
have). Rank 0 saves model and optimizer state with torch.save every
--checkpoint_every steps (to a temporary name, then renamed, as ringlet
writes its own); every process loads it at start, when it exists. Needs
Debian's python3-torch (PyTorch 1.13, CPU); ringlet does not.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "nn", "bench"))
from train_bench_torch import lenet  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--checkpoint_every", type=int, default=20)
    parser.add_argument("--ckpt", required=True, help="checkpoint folder")
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(lenet())
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    loss_fn = nn.CrossEntropyLoss()
    path = os.path.join(args.ckpt, "ddp.pt")
    step = 0
    if os.path.exists(path):
        state = torch.load(path)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
        if rank == 0:
            print(f"resumed at step {step}", flush=True)
    local = args.batch_size // world
    while step < args.steps:
        g = torch.Generator().manual_seed(step)
        x = torch.rand(args.batch_size, 1, 28, 28, generator=g)
        y = torch.randint(0, 10, (args.batch_size,), generator=g)
        mine = slice(rank * local, (rank + 1) * local)
        opt.zero_grad()
        loss_fn(model(x[mine]), y[mine]).backward()
        opt.step()
        step += 1
        if rank == 0 and step % args.checkpoint_every == 0:
            os.makedirs(args.ckpt, exist_ok=True)
            torch.save({"model": model.module.state_dict(),
                        "opt": opt.state_dict(), "step": step}, path + ".tmp")
            os.replace(path + ".tmp", path)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
