#!/usr/bin/python3
"""The book's two programs in PyTorch, as the peer of ringlet's trainers:

  python3 trainers/book_torch.py --program=concise --devices=cuda:0
  python3 trainers/book_torch.py --program=scratch --devices=cuda:0,cuda:1

d2l's "Training on Multiple GPUs" (scratch: LeNet as tensors, get_params,
split_batch, allreduce through the first device, sgd(params, lr,
batch_size); batch 256, lr 0.2) and "Concise Implementation for Multiple
GPUs" (d2l's ResNet-18 in nn.DataParallel, normal(0.01) init, SGD; batch
256 and lr 0.1 per device), on Fashion-MNIST read from the original .gz
files. fp32 with TF32 off unless --tf32. Times the training loop of each
epoch as the book does (evaluation excluded) and ends with the book's line:
"test acc: 0.92, 7.8 sec/epoch on [cuda:0]". Needs PyTorch (any version
since 1.13); ringlet itself does not.
"""
import argparse
import gzip
import os
import struct
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import lenet_scratch, resnet18  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xff
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]),
                            dtype=torch.uint8).reshape(shape)


def load(data_dir, split, limit):
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    if limit > 0:
        x, y = x[:limit], y[:limit]
    # ToTensor(): [N, 1, 28, 28] floats in [0, 1].
    return x.unsqueeze(1).float() / 255, y.long()


def batches(x, y, batch_size, shuffle):
    order = torch.randperm(len(y)) if shuffle else torch.arange(len(y))
    for i in range(0, len(y), batch_size):
        idx = order[i:i + batch_size]
        yield x[idx], y[idx]


# --- the scratch chapter -------------------------------------------------

def get_params(params, device):
    new = [p.to(device) for p in params]
    for p in new:
        p.requires_grad_()
    return new


def allreduce(data):
    for i in range(1, len(data)):
        data[0][:] += data[i].to(data[0].device)
    for i in range(1, len(data)):
        data[i][:] = data[0].to(data[i].device)


def run_scratch(args, devices, train, test):
    scale = 0.01
    shapes = [(20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,),
              (128, 10), (10,)]
    params = [torch.randn(s) * scale if len(s) > 1 else torch.zeros(s)
              for s in shapes]
    device_params = [get_params(params, d) for d in devices]
    loss = nn.CrossEntropyLoss(reduction="none")

    def train_batch(X, y):
        X_shards, y_shards = X.chunk(len(devices)), y.chunk(len(devices))
        ls = [loss(lenet_scratch(X_shard.to(d), p), y_shard.to(d)).sum()
              for X_shard, y_shard, p, d in zip(X_shards, y_shards,
                                                device_params, devices)]
        for l in ls:
            l.backward()
        with torch.no_grad():
            for i in range(len(device_params[0])):
                allreduce([device_params[c][i].grad
                           for c in range(len(devices))])
        for p in device_params:
            with torch.no_grad():
                for param in p:
                    param -= args.lr * param.grad / X.shape[0]
                    param.grad.zero_()

    def accuracy():
        correct = 0
        with torch.no_grad():
            for X, y in batches(*test, args.batch_size, False):
                X, y = X.to(devices[0]), y.to(devices[0])
                correct += (lenet_scratch(X, device_params[0]).argmax(1)
                            == y).sum().item()
        return correct / len(test[1])

    return train_batch, accuracy


# --- the concise chapter -------------------------------------------------

def run_concise(args, devices, train, test):
    net = resnet18()

    def init_weights(m):
        if type(m) in [nn.Linear, nn.Conv2d]:
            nn.init.normal_(m.weight, std=0.01)

    net.apply(init_weights)
    on_gpus = devices[0].type == "cuda"
    if on_gpus:
        net = nn.DataParallel(net, device_ids=devices).to(devices[0])
    trainer = torch.optim.SGD(net.parameters(), args.lr)
    loss = nn.CrossEntropyLoss()

    def train_batch(X, y):
        net.train()
        trainer.zero_grad()
        X, y = X.to(devices[0]), y.to(devices[0])
        loss(net(X), y).backward()
        trainer.step()

    def accuracy():
        net.eval()
        correct = 0
        with torch.no_grad():
            for X, y in batches(*test, args.batch_size, False):
                X, y = X.to(devices[0]), y.to(devices[0])
                correct += (net(X).argmax(1) == y).sum().item()
        return correct / len(test[1])

    return train_batch, accuracy


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--program", choices=["scratch", "concise"],
                        default="concise")
    parser.add_argument("--devices", default="cuda:0",
                        help="cuda:0[,cuda:1...] or cpu")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=0,
                        help="0: the book's (256; concise: 256 per device)")
    parser.add_argument("--lr", type=float, default=0,
                        help="0: the book's (scratch 0.2; concise 0.1 per "
                             "device)")
    parser.add_argument("--tf32", action="store_true",
                        help="allow TF32 in matmul and cuDNN (default: fp32)")
    parser.add_argument("--data_dir",
                        default=os.environ.get(
                            "FASHION_MNIST_DIR",
                            "/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--limit", type=int, default=0,
                        help="training images (0: all)")
    parser.add_argument("--test_limit", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    devices = [torch.device(d) for d in args.devices.split(",")]
    if devices[0].type == "cuda" and not torch.cuda.is_available():
        sys.exit("book_torch: no GPU visible to PyTorch; use --devices=cpu")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.manual_seed(args.seed)
    n = len(devices)
    if args.batch_size == 0:
        args.batch_size = 256 * n if args.program == "concise" else 256
    if args.lr == 0:
        args.lr = 0.1 * n if args.program == "concise" else 0.2
    train = load(args.data_dir, "train", args.limit)
    test = load(args.data_dir, "test", args.test_limit)
    run = run_scratch if args.program == "scratch" else run_concise
    train_batch, accuracy = run(args, devices, train, test)

    def sync():
        for d in devices:
            if d.type == "cuda":
                torch.cuda.synchronize(d)

    times, acc = [], 0.0
    for epoch in range(args.epochs):
        sync()
        start = time.perf_counter()
        for X, y in batches(*train, args.batch_size, True):
            train_batch(X, y)
        sync()
        times.append(time.perf_counter() - start)
        acc = accuracy()
        print(f"epoch {epoch + 1}/{args.epochs}: test acc {acc:.3f}, "
              f"{times[-1]:.1f} s", flush=True)
    names = ", ".join(str(d) for d in devices)
    print(f"test acc: {acc:.2f}, {sum(times) / len(times):.1f} sec/epoch on "
          f"[{names}] (PyTorch {torch.__version__}, "
          f"{'TF32' if args.tf32 else 'fp32'})")


if __name__ == "__main__":
    main()
