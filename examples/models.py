"""Models and synthetic data for the example jobs (PyTorch, no torchvision).

- ``cnn``: a small convolutional network (3 conv layers, 2 linear) on 3x32x32 images;
- ``resnet18``: ResNet-18 (basic blocks [2, 2, 2, 2], CIFAR-style 3x3 stem), with a width
  parameter (64 is the published network; smaller widths keep CPU runs short);
- ``mlp``: a 3-layer perceptron on 784-dimensional inputs.

The data is synthetic and learnable: inputs are seeded Gaussian noise and the labels
come from a fixed random "teacher" (a linear map of the input), so the loss goes down
as the model trains. Everything is deterministic for a seed.
"""

import torch
from torch import nn
import torch.nn.functional as F

MIB = 1024.0 * 1024.0
NUM_CLASSES = 10


class SmallCNN(nn.Module):
    """Three 3x3 conv layers with batch norm and pooling, then two linear layers."""

    def __init__(self, width=32, num_classes=NUM_CLASSES):
        super().__init__()
        w = width
        self.features = nn.Sequential(
            nn.Conv2d(3, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(w, 2 * w, 3, padding=1), nn.BatchNorm2d(2 * w), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * w, 4 * w, 3, padding=1), nn.BatchNorm2d(4 * w), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * w, 128), nn.ReLU(),
                                  nn.Linear(128, num_classes))

    def forward(self, x):
        return self.head(self.features(x))


class BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 convs and a (projected when needed) shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 for 32x32 inputs: a 3x3 stem, four stages of two basic blocks."""

    def __init__(self, width=64, num_classes=NUM_CLASSES):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU())
        layers, cin = [], width
        for i, stride in enumerate((1, 2, 2, 2)):
            cout = width * (2 ** i)
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class MLP(nn.Module):
    """784 -> hidden -> hidden -> 10, ReLU."""

    def __init__(self, hidden=1024, num_classes=NUM_CLASSES):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.net(x)


# name -> (constructor taking width, input shape without batch,
#          {device type: (default width, default batch)}).
# On CPU the defaults are smaller so that a test runs in seconds on two cores.
MODELS = {
    "cnn": (SmallCNN, (3, 32, 32), {"cuda": (64, 128), "cpu": (32, 32)}),
    "resnet18": (ResNet18, (3, 32, 32), {"cuda": (64, 128), "cpu": (16, 16)}),
    "mlp": (MLP, (784,), {"cuda": (4096, 512), "cpu": (256, 64)}),
}


def build(name, width=None, batch=None, seed=0, device_type="cpu"):
    """Return (model, input shape, batch size) for a model name, seeded; width and
    batch default to the model's defaults for the device type."""
    if name not in MODELS:
        raise SystemExit("unknown model %r: choose one of %s" % (name, ", ".join(sorted(MODELS))))
    make, shape, defaults = MODELS[name]
    default_width, default_batch = defaults.get(device_type, defaults["cpu"])
    torch.manual_seed(seed)
    return make(width or default_width), shape, batch or default_batch


def synthetic_batches(shape, batch, n_batches, seed, device):
    """Return ``n_batches`` (inputs, labels) pairs; labels from a fixed random teacher."""
    g = torch.Generator().manual_seed(seed + 1)
    dim = 1
    for s in shape:
        dim *= s
    teacher = torch.randn(dim, NUM_CLASSES, generator=g)
    out = []
    for _ in range(n_batches):
        x = torch.randn((batch,) + tuple(shape), generator=g)
        y = (x.reshape(batch, -1) @ teacher).argmax(dim=1)
        out.append((x.to(device), y.to(device)))
    return out


def persistent_mib(model):
    """Persistent memory estimate: weights, gradients and momentum (3 x 4 bytes a parameter)."""
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    return (12.0 * params + buffers) / MIB


def ephemeral_mib(model, x):
    """Ephemeral memory estimate: bytes of the tensors one forward pass saves for backward,
    plus the output. Measured with autograd's saved-tensor hooks (works on CPU)."""
    total = [0]

    def pack(t):
        total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    total[0] += out.numel() * out.element_size()
    model.zero_grad(set_to_none=True)
    return total[0] / MIB


def count_params(model):
    return sum(p.numel() for p in model.parameters())
