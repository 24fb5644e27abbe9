"""train_mlp on data of one's own: scikit-learn's digits saved by numpy
(8x8 images, class ids as int64, numpy's default) in an .npz, trained with
DataParallel on two CPU devices, its parameters saved as PyTorch's
state_dict; PyTorch loads them (strict) into the same perceptron and
scores the test images as train_mlp did.

  own_data_test.py BINARY
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.torch import load_file
from sklearn.datasets import load_digits


def main():
    binary = sys.argv[1]
    x, y = load_digits(return_X_y=True)
    assert y.dtype == np.int64
    x = (x.reshape(-1, 8, 8) * 16).clip(0, 255).astype("uint8")
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "digits.npz")
        saved = os.path.join(d, "mlp.safetensors")
        np.savez(data, train_inputs=x[:1500], train_targets=y[:1500],
                 test_inputs=x[1500:], test_targets=y[1500:])
        log = subprocess.run(
            [binary, "--data=" + data, "--devices=cpu:2", "--epochs=20",
             "--save=" + saved], check=True, capture_output=True,
            text=True).stdout
        print(log)
        said = float(re.findall(r"test acc ([0-9.]+)", log)[-1])
        state = load_file(saved)

    net = torch.nn.Module()
    net.hidden = torch.nn.Linear(64, 256)
    net.out = torch.nn.Linear(256, 10)
    net.load_state_dict(state, strict=True)
    images = torch.from_numpy(x[1500:].reshape(-1, 64).astype("float32") / 255)
    with torch.no_grad():
        predicted = net.out(torch.relu(net.hidden(images))).argmax(1).numpy()
    accuracy = float((predicted == y[1500:]).mean())
    print(f"train_mlp said {said:.4f}; PyTorch with its parameters "
          f"{accuracy:.4f}")
    assert abs(accuracy - said) <= 1.5 / len(predicted), (accuracy, said)
    assert accuracy > 0.85, accuracy
    print("PASS")


if __name__ == "__main__":
    main()
