#!/usr/bin/python3
"""The smallest training loop under the salus daemon (the client README's diff).

    SALUS_ADDR=/tmp/salus.sock /usr/bin/python3 examples/minimal.py

An ordinary PyTorch loop on synthetic data; the lines marked ``# salus`` are all that
putting it under the daemon takes. Every 10 steps it evaluates on held-out data, after
ending the step's iteration, so evaluation does not hold the lane. Prints one JSON line
per evaluation and a ``done`` line.
"""

import json
import os
import sys

# Not needed once the client is installed (pip install ./client/python).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "client", "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import salus_client  # noqa: E402  # salus

torch.manual_seed(0)
teacher = torch.randn(32, 4)
data = [torch.randn(16, 32) for _ in range(41)]
held_out, loader = data[0], [(x, (x @ teacher).argmax(dim=1)) for x in data[1:]]
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()


def evaluate():
    with torch.no_grad():
        return loss_fn(model(held_out), (held_out @ teacher).argmax(dim=1)).item()


sess = salus_client.Session(name="minimal-%d" % os.getpid(), total_time=1, persistent=10, ephemeral=10)  # salus
for step, (x, y) in enumerate(sess.iterate(loader)):  # salus: was enumerate(loader)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    if step % 10 == 9:
        sess.end_iteration()  # salus: evaluate (and checkpoint) between iterations
        print(json.dumps({"ev": "eval", "step": step, "loss": round(evaluate(), 5)}), flush=True)
sess.close()  # salus (optional: at exit the session closes itself)
print(json.dumps({"ev": "done", "steps": len(loader)}), flush=True)
