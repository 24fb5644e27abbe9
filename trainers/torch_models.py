"""PyTorch's side of ringlet's trainers: the models whose parameters
--params_out writes (safetensors, under these models' own names), so a
trained model runs in PyTorch:

    import sys; sys.path.insert(0, "/path/to/ringlet/trainers")
    from safetensors.torch import load_file
    from torch_models import resnet18, lenet_scratch, LENET_SCRATCH_NAMES

    net = resnet18(num_classes=10, in_channels=1)   # resnet_dp's
    net.load_state_dict(load_file("model.safetensors"), strict=True)
    net.eval(); logits = net(images)                 # images [n, C, H, W]

    state = load_file("lenet.safetensors")           # lenet_scratch's
    logits = lenet_scratch(images, [state[n] for n in LENET_SCRATCH_NAMES])

resnet18 is d2l's ResNet-18 ("Concise Implementation for Multiple GPUs")
with its module names; lenet_scratch is the from-scratch chapter's LeNet as
functions of its parameter tensors. Inputs are scaled as the trainers read
them (uint8 images to [0, 1]). Needs PyTorch; ringlet itself does not.
"""
import torch
from torch import nn
from torch.nn import functional as F

# The from-scratch chapter's parameters, in get_params's order.
LENET_SCRATCH_NAMES = ["W1", "b1", "W2", "b2", "W3", "b3", "W4", "b4"]


class Residual(nn.Module):
    def __init__(self, in_channels, out_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.conv3 = (nn.Conv2d(in_channels, out_channels, 1, stride=strides)
                      if use_1x1conv else None)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.conv3 is not None:
            x = self.conv3(x)
        return torch.relu(y + x)


def resnet18(num_classes=10, in_channels=1):
    def block(cin, cout, n, first):
        layers = []
        for i in range(n):
            if i == 0 and not first:
                layers.append(Residual(cin, cout, use_1x1conv=True, strides=2))
            else:
                layers.append(Residual(cout, cout))
        return nn.Sequential(*layers)
    # The book's module names (its state_dict's keys: "resnet_block1...",
    # "fc.1.weight"), which ringlet's safetensors files use.
    net = nn.Sequential(
        nn.Conv2d(in_channels, 64, 3, stride=1, padding=1), nn.BatchNorm2d(64),
        nn.ReLU())
    net.add_module("resnet_block1", block(64, 64, 2, True))
    net.add_module("resnet_block2", block(64, 128, 2, False))
    net.add_module("resnet_block3", block(128, 256, 2, False))
    net.add_module("resnet_block4", block(256, 512, 2, False))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(),
                                       nn.Linear(512, num_classes)))
    return net



def lenet_scratch(X, params):
    h1 = F.relu(F.conv2d(X, params[0], params[1]))
    h1 = F.avg_pool2d(h1, kernel_size=2, stride=2)
    h2 = F.relu(F.conv2d(h1, params[2], params[3]))
    h2 = F.avg_pool2d(h2, kernel_size=2, stride=2).reshape(h2.shape[0], -1)
    h3 = F.relu(torch.mm(h2, params[4]) + params[5])
    return torch.mm(h3, params[6]) + params[7]
