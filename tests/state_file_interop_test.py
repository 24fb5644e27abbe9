"""nn::SaveStateFile's file is PyTorch's state_dict: the same model built in
PyTorch loads it with strict=True and gives the same output; and a
state_dict PyTorch saves loads into ringlet's model (nn::LoadStateFile),
again with the same output.

  state_file_interop_test.py BINARY   (tests/state_file_interop.cc)
"""
import collections
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file


class GlobalAvgPool(torch.nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3))


def model():
    # Named as ringlet's Sequential names its children.
    return torch.nn.Sequential(collections.OrderedDict([
        ("0", torch.nn.Conv2d(1, 2, 3, padding=1)),
        ("1", torch.nn.BatchNorm2d(2)),
        ("2", GlobalAvgPool()),
        ("3", torch.nn.Linear(2, 3)),
    ])).eval()


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([binary, "write", d], check=True)
        net = model()
        net.load_state_dict(load_file(d + "/model.safetensors"), strict=True)
        io = load_file(d + "/io.safetensors")
        with torch.no_grad():
            got = net(io["input"])
        torch.testing.assert_close(got, io["output"], rtol=1e-5, atol=1e-6)
        print("PyTorch loads ringlet's state: same output",
              got.flatten()[:3].tolist())

        # Back: PyTorch's own state, changed, into ringlet's model.
        with torch.no_grad():
            for p in net.parameters():
                p.mul_(0.5).add_(0.1)
            net[1].running_var.fill_(2.0)
            want = net(io["input"])
        save_file(net.state_dict(), d + "/torch.safetensors")
        subprocess.run([binary, "read", d], check=True)
        back = load_file(d + "/back.safetensors")["output"]
        torch.testing.assert_close(back, want, rtol=1e-5, atol=1e-6)
        print("ringlet loads PyTorch's state: same output",
              back.flatten()[:3].tolist())


if __name__ == "__main__":
    main()
