#!/usr/bin/env python3
"""An ImageFolder read by ringlet and by torchvision, side by side.

Writes Fashion-MNIST's test images (10,000) as an ImageFolder twice, 28x28
gray PNGs and 32x32 RGB JPEGs (the image tiled into three shifted
channels), then times one epoch of shuffled batches of 256 over each:
ringlet's image_folder_bench (every image decoded once on every core, then
the batches) and torchvision's ImageFolder + DataLoader(num_workers=2,
ToTensor), the decoding inside the epoch. Prints a JSON line per run and
the ratio.

  /usr/bin/python3 data/bench/image_folder_bench.py --bench=bazel-bin/data/bench/image_folder_bench
"""
import argparse
import gzip
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import torch
from PIL import Image
from torchvision import datasets, transforms

FASHION = "/usr/share/datasets/fashion-mnist"


def fashion_test():
    with gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return x, y


def write_folder(root, x, y, kind):
    for c in range(10):
        os.makedirs(os.path.join(root, "class_%d" % c), exist_ok=True)
    for i, (image, label) in enumerate(zip(x, y)):
        folder = os.path.join(root, "class_%d" % label)
        if kind == "png":
            Image.fromarray(image).save(os.path.join(folder, "%05d.png" % i))
        else:
            rgb = np.stack([np.roll(image, s, axis=1) for s in (0, 2, 4)], -1)
            rgb = np.pad(rgb, ((2, 2), (2, 2), (0, 0)))
            Image.fromarray(rgb).save(os.path.join(folder, "%05d.jpg" % i),
                                      quality=90)


def torch_epoch(root, workers, batch):
    start = time.perf_counter()
    data = datasets.ImageFolder(root, transform=transforms.ToTensor())
    loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=True,
                                         num_workers=workers)
    n = 0
    for images, _ in loader:
        n += images.shape[0]
    seconds = time.perf_counter() - start
    return {"images": n, "seconds": round(seconds, 4),
            "images_per_sec": round(n / seconds, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True,
                        help="ringlet's image_folder_bench binary")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--limit", type=int, default=10000,
                        help="images of each folder (from the 10,000)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    x, y = fashion_test()
    x, y = x[:args.limit], y[:args.limit]
    with tempfile.TemporaryDirectory() as d:
        for kind in ("png", "jpg"):
            root = os.path.join(d, kind)
            write_folder(root, x, y, kind)
            t = torch_epoch(root, args.workers, args.batch_size)
            out = subprocess.run(
                [args.bench, "--root=" + root,
                 "--batch_size=%d" % args.batch_size],
                check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            print(json.dumps({"folder": kind, "ringlet": r, "torchvision": t,
                              "ratio": round(r["images_per_sec"] /
                                             t["images_per_sec"], 2)}))


if __name__ == "__main__":
    main()
