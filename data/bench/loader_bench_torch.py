#!/usr/bin/env python3
"""PyTorch's peer of //data/bench:loader_bench's BM_AugmentedCifarBatches.

50,000 CIFAR-10-shaped images (uint8, 32 x 32 x 3) in memory, shuffled
batches of 256 through torch.utils.data.DataLoader with torchvision's
CIFAR recipe: RandomCrop(32, padding=4), RandomHorizontalFlip, ToTensor,
Normalize. Two pipelines: PIL images, as torchvision.datasets.CIFAR10 hands
them out, and uint8 tensors. Prints one JSON line each with images/s.

  /usr/bin/python3 data/bench/loader_bench_torch.py [--workers=2] [--batches=100]
"""
import argparse
import json
import os
import time

import numpy as np
import torch
from PIL import Image
from torchvision import transforms

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


class InMemory(torch.utils.data.Dataset):
    def __init__(self, images, labels, transform, pil):
        self.images, self.labels = images, labels
        self.transform, self.pil = transform, pil

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i]
        x = Image.fromarray(x) if self.pil else torch.from_numpy(x).permute(2, 0, 1)
        return self.transform(x), int(self.labels[i])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--batches", type=int, default=100)
    args = parser.parse_args()
    n = 50000
    index = np.arange(n * 3072, dtype=np.uint64)
    images = ((index * 2654435761) >> 24).astype(np.uint8).reshape(n, 32, 32, 3)
    labels = np.zeros(n, dtype=np.int64)
    augment = [transforms.RandomCrop(32, padding=4),
               transforms.RandomHorizontalFlip()]
    pipelines = {
        "pil": transforms.Compose(augment + [transforms.ToTensor(),
                                             transforms.Normalize(MEAN, STD)]),
        "tensor": transforms.Compose(
            augment + [transforms.ConvertImageDtype(torch.float32),
                       transforms.Normalize(MEAN, STD)]),
    }
    for name, transform in pipelines.items():
        loader = torch.utils.data.DataLoader(
            InMemory(images, labels, transform, name == "pil"),
            batch_size=256, shuffle=True, num_workers=args.workers,
            persistent_workers=args.workers > 0)
        it = iter(loader)
        for _ in range(5):  # Workers started and warm.
            next(it)
        start = time.perf_counter()
        seen = 0
        for _ in range(args.batches):
            try:
                x, _ = next(it)
            except StopIteration:
                it = iter(loader)
                x, _ = next(it)
            seen += x.shape[0]
        seconds = time.perf_counter() - start
        print(json.dumps({"framework": "pytorch " + torch.__version__,
                          "pipeline": name, "workers": args.workers,
                          "batch_size": 256,
                          "images_per_sec": round(seen / seconds)}),
              flush=True)


if __name__ == "__main__":
    main()
