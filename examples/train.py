#!/usr/bin/python3
"""A real PyTorch training job on synthetic data, alone or under the salus daemon.

    /usr/bin/python3 examples/train.py --model cnn --iterations 50
    /usr/bin/python3 examples/train.py --model resnet18 --iterations 50 --salus /tmp/salus.sock

Prints JSON Lines on stdout: one ``start`` line (model, device, memory figures, the
lane when under the daemon), one ``iter`` line per iteration (``s``: the iteration's
wall time including the daemon's begin/end round trip; ``wait_us``: time the daemon
held the job back; ``loss``), and one ``done`` line (median iteration time, first and
last loss). Runs on CUDA when there is a GPU, else on CPU with ``--threads`` threads.

Exit status: 0 when done, 3 when the daemon went away (the job stops; ``--on-daemon-gone
continue`` finishes the remaining iterations alone instead). A daemon that can recover
sessions (``salus serve --events``) and comes back within its recover window gets the
job back: the client reconnects and resumes its session.
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "client", "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import models  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="cnn", choices=sorted(models.MODELS))
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=0, help="0: the model's default")
    p.add_argument("--width", type=int, default=0, help="channels/hidden units; 0: the model's default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--threads", type=int, default=2, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--salus", default=None, metavar="ADDR",
                   help="run under the salus daemon at ADDR (socket path or HOST:PORT); "
                        "'env' uses $SALUS_ADDR or the default socket")
    p.add_argument("--wait-go", action="store_true",
                   help="after start-up, print {\"ev\":\"ready\"} and wait for a line on stdin "
                        "before opening the session (lets a launcher set exact arrival times)")
    p.add_argument("--job", default=None, help="job name under the daemon (default MODEL-PID)")
    p.add_argument("--declared-s", type=float, default=None,
                   help="declared GPU time of the whole job, seconds, start-up excluded (what SRTF uses; required under srtf)")
    p.add_argument("--priority", type=int, default=None)
    p.add_argument("--persistent-mib", type=float, default=None)
    p.add_argument("--ephemeral-mib", type=float, default=None)
    p.add_argument("--alternate", type=int, default=0, metavar="K",
                   help="with --salus: run K iterations under the daemon, then K without it, and so "
                        "on (the overhead experiment: both kinds interleaved in one process); "
                        "iteration lines then carry \"gated\"")
    p.add_argument("--on-daemon-gone", choices=("stop", "continue"), default="stop")
    return p.parse_args(argv)


def pick_device(name):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def emit(**fields):
    sys.stdout.write(json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def wait_go(args):
    """With --wait-go: say ready, then block until the launcher writes a line."""
    if args.wait_go:
        emit(ev="ready")
        sys.stdin.readline()


def declared_memory(args, model, sample, device):
    """The memory figures to declare: given, or on CPU estimated; on CUDA None (the
    client measures them over the first iterations)."""
    pers, eph = args.persistent_mib, args.ephemeral_mib
    if device.type == "cpu" and (pers is None or eph is None):
        pers = pers if pers is not None else round(models.persistent_mib(model), 3)
        eph = eph if eph is not None else round(models.ephemeral_mib(model, sample), 3)
    return pers, eph


def open_session(args, memory, batch):
    """Open the daemon session (returns once the job is admitted into a lane)."""
    import salus_client
    pers, eph = memory
    return salus_client.Session(
        name=args.job or "%s-%d" % (args.model, os.getpid()), total_time=args.declared_s,
        persistent=pers, ephemeral=eph, priority=args.priority, iterations=args.iterations,
        address=None if args.salus == "env" else args.salus, on_daemon_gone=args.on_daemon_gone,
        label=args.model, batch_size=batch)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(max(1, args.threads))
    device = pick_device(args.device)
    t_start = time.perf_counter()
    model, shape, batch = models.build(args.model, args.width or None, args.batch_size or None,
                                       args.seed, device.type)
    model = model.to(device)
    data = models.synthetic_batches(shape, batch, 4, args.seed, device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    memory = declared_memory(args, model, data[0][0], device) if args.salus else None
    wait_go(args)
    sess = None
    if args.salus:
        sess = open_session(args, memory, batch)
    emit(ev="start", model=args.model, device=str(device), batch=batch,
         params=models.count_params(model), threads=torch.get_num_threads(),
         salus=sess.address if sess else None, lane=sess.lane if sess else None,
         lane_mib=sess.lane_mib if sess else None, policy=sess.policy if sess else None,
         startup_s=round(time.perf_counter() - t_start, 4))

    import salus_client  # noqa: F401  (cheap; for the exception class)
    times, losses = [], []
    status = 0
    model.train()
    for i in range(args.iterations):
        x, y = data[i % len(data)]
        gated = sess is not None and (args.alternate <= 0 or (i // args.alternate) % 2 == 0)
        gate = sess.iteration() if gated else contextlib.nullcontext()
        t0 = time.perf_counter()
        try:
            with gate:
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                loss_value = loss.item()
        except salus_client.DaemonGone as e:
            emit(ev="daemon_gone", i=i, error=str(e))
            sess.close(finished=False)
            sess = None
            if args.on_daemon_gone == "stop":
                status = 3
                break
            continue
        dt = time.perf_counter() - t0
        wait_us = sess.last_wait_us if gated else None
        if gated and sess.alone:  # the daemon went away and the session carries on alone
            emit(ev="daemon_gone", i=i, error="the salus daemon at %s went away; going on alone" % sess.address)
            sess.close(finished=False)
            sess, gated, wait_us = None, False, None
        times.append(dt)
        losses.append(loss_value)
        emit(ev="iter", i=i, s=round(dt, 6), gated=gated, wait_us=wait_us, loss=round(loss_value, 5))
    lane_mib = sess.lane_mib if sess else None
    if sess:
        sess.close(finished=status == 0)
    tail = losses[-min(5, len(losses)):] if losses else []
    memory = {}
    if device.type == "cuda":
        # What the allocator held at its peak, against the lane the daemon gave us.
        memory = dict(peak_mib=round(torch.cuda.max_memory_reserved() / models.MIB, 3),
                      lane_mib=lane_mib)
    emit(ev="done", model=args.model, iterations=len(times),
         median_s=round(statistics.median(times), 6) if times else None,
         loss_first=round(losses[0], 5) if losses else None,
         loss_last=round(sum(tail) / len(tail), 5) if tail else None,
         wall_s=round(time.perf_counter() - t_start, 4), **memory)
    return status


if __name__ == "__main__":
    sys.exit(main())
