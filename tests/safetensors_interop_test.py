#!/usr/bin/python3
"""--params_out=FILE.safetensors read by the safetensors package, as a
PyTorch user would, and --params_in reading it back.

Each trainer trains briefly and writes its parameters as safetensors; the
file is loaded with safetensors' own loader, its names and shapes must be
those of the book's model (d2l's ResNet-18 nn.Module state_dict, LeNet's
W1..b4), and a forward pass over test images written here in numpy from the
book's definitions must classify them as ringlet does (--eval_only, the same
accuracy). Where PyTorch is installed, the book's nn.Module also loads the
file with load_state_dict(strict=True) and agrees. Then --params_in reads
the file back and evaluates to the same accuracy.

Args: the lenet_scratch and resnet_dp binaries. Needs numpy and the
safetensors package (./bazelw installs both); skips, saying so, without.
"""
import gzip
import os
import re
import struct
import subprocess
import sys

try:
    import numpy as np
    from safetensors.numpy import load_file
except ImportError as e:
    print(f"SKIPPED: {e} (./bazelw installs numpy and safetensors)")
    sys.exit(0)

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
TMP = os.environ.get("TEST_TMPDIR", "/tmp")
failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def test_images(n):
    with gzip.open(os.path.join(DATA, "t10k-images-idx3-ubyte.gz")) as f:
        _, count, rows, cols = struct.unpack(">IIII", f.read(16))
        x = np.frombuffer(f.read(n * rows * cols), np.uint8)
    with gzip.open(os.path.join(DATA, "t10k-labels-idx1-ubyte.gz")) as f:
        f.read(8)
        y = np.frombuffer(f.read(n), np.uint8)
    return (x.astype(np.float32) / np.float32(255)).reshape(n, 1, rows, cols), y


def conv2d(x, w, b, stride=1, pad=0):
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - k) // stride + 1
    ow = (wd + 2 * pad - k) // stride + 1
    cols = np.empty((n, c, k, k, oh, ow), np.float32)
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = x[:, :, i:i + stride * oh:stride,
                                 j:j + stride * ow:stride]
    out = np.einsum("nckluv,ockl->nouv", cols, w, optimize=True)
    return out + b.reshape(1, o, 1, 1)


def avg_pool2(x):  # 2x2, stride 2; an odd last row or column dropped.
    n, c, h, w = x.shape
    x = x[:, :, :h // 2 * 2, :w // 2 * 2]
    return x.reshape(n, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


def relu(x):
    return np.maximum(x, 0)


def batch_norm(x, p, name):  # Evaluation: running statistics, eps 1e-5.
    scale = p[name + ".weight"] / np.sqrt(p[name + ".running_var"] + 1e-5)
    shift = p[name + ".bias"] - p[name + ".running_mean"] * scale
    return x * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)


def lenet_forward(p, x):  # The scratch chapter's lenet.
    h = avg_pool2(relu(conv2d(x, p["W1"], p["b1"])))
    h = avg_pool2(relu(conv2d(h, p["W2"], p["b2"]))).reshape(len(x), -1)
    h = relu(h @ p["W3"] + p["b3"])
    return h @ p["W4"] + p["b4"]


# d2l's resnet18(10, 1) for Fashion-MNIST: (name, in, out, first) per block.
BLOCKS = [("resnet_block1", 64, 64, True), ("resnet_block2", 64, 128, False),
          ("resnet_block3", 128, 256, False), ("resnet_block4", 256, 512, False)]


def resnet_names():
    """The book model's state_dict keys, with shapes."""
    names = {"0.weight": (64, 1, 3, 3), "0.bias": (64,)}
    def bn(prefix, c):
        names.update({prefix + ".weight": (c,), prefix + ".bias": (c,),
                      prefix + ".running_mean": (c,),
                      prefix + ".running_var": (c,),
                      prefix + ".num_batches_tracked": ()})
    bn("1", 64)
    for block, cin, cout, first in BLOCKS:
        for i in range(2):
            r = f"{block}.{i}"
            c0 = cin if i == 0 else cout
            names[r + ".conv1.weight"] = (cout, c0, 3, 3)
            names[r + ".conv1.bias"] = (cout,)
            names[r + ".conv2.weight"] = (cout, cout, 3, 3)
            names[r + ".conv2.bias"] = (cout,)
            if i == 0 and not first:
                names[r + ".conv3.weight"] = (cout, cin, 1, 1)
                names[r + ".conv3.bias"] = (cout,)
            bn(r + ".bn1", cout)
            bn(r + ".bn2", cout)
    names["fc.1.weight"] = (10, 512)
    names["fc.1.bias"] = (10,)
    return names


def resnet_forward(p, x):
    x = relu(batch_norm(conv2d(x, p["0.weight"], p["0.bias"], 1, 1), p, "1"))
    for block, _, _, first in BLOCKS:
        for i in range(2):
            r = f"{block}.{i}"
            stride = 2 if i == 0 and not first else 1
            y = conv2d(x, p[r + ".conv1.weight"], p[r + ".conv1.bias"], stride, 1)
            y = relu(batch_norm(y, p, r + ".bn1"))
            y = conv2d(y, p[r + ".conv2.weight"], p[r + ".conv2.bias"], 1, 1)
            y = batch_norm(y, p, r + ".bn2")
            if r + ".conv3.weight" in p:
                x = conv2d(x, p[r + ".conv3.weight"], p[r + ".conv3.bias"],
                           stride, 0)
            x = relu(y + x)
    x = x.mean(axis=(2, 3))
    return x @ p["fc.1.weight"].T + p["fc.1.bias"]


def torch_forward(program, path, x):
    """The book's model loading the file through PyTorch, or None."""
    try:
        import torch
        from safetensors.torch import load_file as torch_load
    except ImportError:
        return None
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    sys.path.insert(0, os.path.join(root, "trainers"))
    state = torch_load(path)
    with torch.no_grad():
        if program == "lenet_scratch":
            from torch_models import LENET_SCRATCH_NAMES, lenet_scratch
            params = [state[n] for n in LENET_SCRATCH_NAMES]
            return lenet_scratch(torch.from_numpy(x), params).numpy()
        from torch_models import resnet18
        net = resnet18()
        net.load_state_dict(state, strict=True)
        net.eval()
        return net(torch.from_numpy(x)).numpy()


def ringlet_accuracy(binary, flags):
    out = subprocess.run([binary] + flags, check=True, capture_output=True,
                         text=True).stdout
    match = re.search(r"test acc: ([0-9.]+) on (\d+) images", out)
    return float(match.group(1)), int(match.group(2))


def run(program, binary, train_flags, images, expected_names):
    path = os.path.join(TMP, program + ".safetensors")
    common = ["--devices=cpu:1", f"--test_limit={images}", "--seed=2"]
    subprocess.run([binary] + common + train_flags + ["--params_out=" + path],
                   check=True, capture_output=True)
    params = load_file(path)
    shapes = {k: tuple(v.shape) for k, v in params.items()}
    check(shapes == expected_names,
          f"{program}: names and shapes are the book model's "
          f"(extra {sorted(set(shapes) - set(expected_names))[:3]}, "
          f"missing {sorted(set(expected_names) - set(shapes))[:3]})")
    x, y = test_images(images)
    forward = lenet_forward if program == "lenet_scratch" else resnet_forward
    mine, n = ringlet_accuracy(binary, common + ["--eval_only",
                                                 "--params_in=" + path])
    numpy_acc = float((forward(params, x).argmax(1) == y).mean())
    check(n == images and mine > 0.15,
          f"{program}: ringlet's accuracy {mine:.3f} on {n} images is above "
          "chance, so the comparison means something")
    # ringlet prints 3 decimals; a near-tie may round either way.
    check(abs(numpy_acc - mine) <= 0.0005 + 1.0 / images,
          f"{program}: numpy forward of the file {numpy_acc:.3f}, "
          f"ringlet {mine:.3f}")
    # Image by image: the classes --predict gives for the first 20 images
    # (their uint8 pixels, as the training data holds them) are the file's
    # forward's.
    pixels = os.path.join(TMP, program + "_first20.npy")
    np.save(pixels, np.rint(x[:20, 0] * 255).astype(np.uint8))
    table = subprocess.run(
        [binary, common[0], "--params_in=" + path, "--predict=" + pixels],
        check=True, capture_output=True, text=True).stdout.splitlines()
    names = table[0].split(",")[3:]
    ours = np.array([names.index("p_" + row.split(",")[1]) for row in table[1:]])
    theirs = forward(params, x[:20]).argmax(1)
    check(len(ours) == 20 and bool((ours == theirs).all()),
          f"{program}: image by image, ringlet's --predict {ours} and the "
          f"file's forward {theirs} agree")
    logits = torch_forward(program, path, x)
    if logits is None:
        print(f"{program}: PyTorch not installed; load_state_dict not tried")
    else:
        torch_acc = float((logits.argmax(1) == y).mean())
        check(abs(torch_acc - mine) <= 0.0005 + 1.0 / images,
              f"{program}: PyTorch's book model, load_state_dict(strict=True)"
              f": {torch_acc:.3f}, ringlet {mine:.3f}")


def main():
    lenet, resnet = sys.argv[1], sys.argv[2]
    run("lenet_scratch", lenet,
        # AdamW leaves the book's slow start (normal(0.01) weights) quickly.
        ["--epochs=1", "--limit=3000", "--batch_size=32", "--optimizer=adamw",
         "--lr=0.01"], 500,
        {"W1": (20, 1, 3, 3), "b1": (20,), "W2": (50, 20, 5, 5), "b2": (50,),
         "W3": (800, 128), "b3": (128,), "W4": (128, 10), "b4": (10,)})
    run("resnet_dp", resnet,
        ["--epochs=1", "--limit=960", "--batch_size=32", "--optimizer=adamw",
         "--lr=0.003"], 200,
        resnet_names())
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("safetensors files read as the book's models")


if __name__ == "__main__":
    main()
