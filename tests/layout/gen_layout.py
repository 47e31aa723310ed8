#!/usr/bin/python3
"""Generate the models of the layout-plan tests: small PyTorch conv chains with elementwise ops,
normalization, resizing and channel concatenation between the convolutions, exported to ONNX.

Writes OUT/models/<case>/ in the layout tests/patterns/gen_patterns.py writes (model.onnx, input_<i>.npy,
torch_<k>.npy, case.json, names.txt) plus expect.txt: "transposes N", the NCHW <-> NHWC transposes one run
may do with the layout plan on (the boundary conversions only). With --node, ONNX Runtime adds
expected_<k>.npy.
"""

import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "patterns"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from gen_patterns import generate  # noqa: E402


class ConvChain(nn.Module):
    """Conv -> Add -> Sigmoid -> Mul (SiLU) -> GroupNorm -> SiLU (GroupNormSwish) -> Resize -> Concat
    (channels) -> Conv."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bias = nn.Parameter(torch.rand(16, 1, 1) - 0.5)
        self.norm = nn.GroupNorm(4, 16, eps=1e-5)
        self.side = nn.Conv2d(3, 8, 1)
        self.conv2 = nn.Conv2d(24, 8, 3, padding=1)

    def forward(self, x):
        y = self.conv1(x) + self.bias
        y = y * torch.sigmoid(y)
        y = F.silu(self.norm(y))
        y = F.interpolate(y, scale_factor=2.0, mode="nearest")
        s = F.interpolate(self.side(x), scale_factor=2.0, mode="nearest")
        return self.conv2(torch.cat([y, s], dim=1))


class YoloBlock(nn.Module):
    """YOLOv8's C2f + SPPF shapes: Conv/SiLU, Split on channels, a residual bottleneck, Concat, MaxPools."""

    def __init__(self):
        super().__init__()
        self.cv1 = nn.Conv2d(8, 16, 1)
        self.b1 = nn.Conv2d(8, 8, 3, padding=1)
        self.b2 = nn.Conv2d(8, 8, 3, padding=1)
        self.cv2 = nn.Conv2d(24, 16, 1)
        self.cv3 = nn.Conv2d(64, 16, 1)

    @staticmethod
    def silu(x):
        return x * torch.sigmoid(x)

    def forward(self, x):
        a, b = self.silu(self.cv1(x)).split(8, dim=1)
        c = b + self.silu(self.b2(self.silu(self.b1(b))))
        y = self.silu(self.cv2(torch.cat([a, b, c], dim=1)))
        p1 = F.max_pool2d(y, 5, 1, 2)
        p2 = F.max_pool2d(p1, 5, 1, 2)
        p3 = F.max_pool2d(p2, 5, 1, 2)
        return self.cv3(torch.cat([y, p1, p2, p3], dim=1))


class DeconvChain(nn.Module):
    """ConvTranspose -> Relu -> Conv with a per-channel scale, and a Conv1d that stays NCHW."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(6, 8, 4, stride=2, padding=1)
        self.scale = nn.Parameter(torch.rand(1, 8, 1, 1) + 0.5)
        self.conv = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(torch.relu(self.up(x)) * self.scale)


class SqueezeExcite(nn.Module):
    """MobileNet-style: depthwise Conv, AveragePool, a squeeze-and-excitation branch (GlobalAveragePool,
    1x1 Convs on (N, C, 1, 1)) scaling the channels, GlobalMaxPool added back."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 16, 3, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.fc1 = nn.Conv2d(16, 4, 1)
        self.fc2 = nn.Conv2d(4, 16, 1)
        self.conv2 = nn.Conv2d(16, 8, 1)

    def forward(self, x):
        y = F.hardswish(self.dw(torch.relu(self.conv1(x))))
        y = F.avg_pool2d(y, 3, 1, 1)
        s = torch.sigmoid(self.fc2(torch.relu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        y = y * s + F.adaptive_max_pool2d(y, 1)
        return self.conv2(y)


class MixedConsumers(nn.Module):
    """An NHWC activation also read by an op that only takes NCHW (Softmax over channels), whose result comes
    back into the NHWC group (Mul): the executor converts once each way."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 1)
        self.conv3 = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv1(x)
        y = y * torch.sigmoid(y)
        b = torch.softmax(y, dim=1)
        return self.conv2(y), self.conv3(y * b)


# name -> (module, [(input name, shape)], opset, boundary transposes with the plan on)
CASES = {
    # conv1 and side read the NCHW graph input (2), conv2 writes the NCHW graph output (1); everything
    # between them (Add, SiLU, GroupNorm + SiLU, Resize, Concat) stays NHWC.
    "conv_chain": (ConvChain, [("x", (1, 3, 12, 10))], 17, 3),
    # cv1 reads the graph input (1), cv3 writes the graph output (1); Split, residual Add, Concat and the
    # MaxPools stay NHWC.
    "yolo_block": (YoloBlock, [("x", (1, 8, 10, 12))], 17, 2),
    # up reads the input (1), conv writes the output (1).
    "deconv_chain": (DeconvChain, [("x", (1, 6, 5, 7))], 17, 2),
    # conv1 reads the input (1), conv2 writes the output (1); the SE branch's (N, C, 1, 1) tensors are the
    # same bytes in both layouts.
    "squeeze_excite": (SqueezeExcite, [("x", (1, 4, 10, 9))], 17, 2),
    # conv1 reads the input (1), y goes to Softmax NCHW (1), its result back to NHWC for the Mul (1), conv2
    # and conv3 write the two outputs (2).
    "mixed_consumers": (MixedConsumers, [("x", (1, 4, 9, 11))], 17, 5),
}


if __name__ == "__main__":
    generate(CASES, "gen_layout.py", __doc__, lambda transposes: {"transposes": transposes})
