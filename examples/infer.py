#!/usr/bin/python3
"""An inference server loop: a model in eval mode answers batch-1 requests with pauses.

    /usr/bin/python3 examples/infer.py --model resnet18 --requests 20 --pause-ms 50
    /usr/bin/python3 examples/infer.py --model cnn --requests 20 --salus /tmp/salus.sock

Requests come from a seeded synthetic stream; between two requests the server idles
for ``--pause-ms`` (the paper's inference jobs pause 10 to 30 s; keep it short here).
Under the daemon every request is one iteration of an ``inference`` session, so the
daemon can put another job's iteration in the pauses.

Prints JSON Lines: ``start``, one ``request`` line per request (``s``: latency including
the daemon round trip; ``wait_us``; ``top``: the predicted class), and ``done`` (median
latency). Exit status 3 when the daemon went away.
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

import models  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet18", choices=sorted(models.MODELS))
    p.add_argument("--requests", type=int, default=20)
    p.add_argument("--pause-ms", type=float, default=50.0)
    p.add_argument("--width", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--salus", default=None, metavar="ADDR")
    p.add_argument("--wait-go", action="store_true",
                   help="after start-up, print {\"ev\":\"ready\"} and wait for a line on stdin "
                        "before opening the session (lets a launcher set exact arrival times)")
    p.add_argument("--job", default=None)
    p.add_argument("--persistent-mib", type=float, default=None)
    p.add_argument("--ephemeral-mib", type=float, default=None)
    return p.parse_args(argv)


def emit(**fields):
    sys.stdout.write(json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(max(1, args.threads))
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if args.device == "auto" else args.device))
    model, shape, _ = models.build(args.model, args.width or None, 1, args.seed, device.type)
    model = model.to(device).eval()
    requests = [x for x, _ in models.synthetic_batches(shape, 1, 8, args.seed, device)]

    sess = None
    if args.wait_go and not args.salus:
        emit(ev="ready")
        sys.stdin.readline()
    if args.salus:
        import salus_client
        pers, eph = args.persistent_mib, args.ephemeral_mib
        if device.type == "cpu":
            # Inference keeps the weights only (no gradients or optimizer state).
            params = sum(p.numel() * p.element_size() for p in model.parameters())
            pers = pers if pers is not None else round(params / models.MIB, 3)
            eph = eph if eph is not None else round(models.ephemeral_mib(model, requests[0]), 3)
        if args.wait_go:
            emit(ev="ready")
            sys.stdin.readline()
        sess = salus_client.Session(
            name=args.job or "infer-%s-%d" % (args.model, os.getpid()), kind="infer",
            persistent=pers, ephemeral=eph, iterations=args.requests,
            address=None if args.salus == "env" else args.salus)
    emit(ev="start", model=args.model, device=str(device), kind="infer",
         salus=sess.address if sess else None, lane=sess.lane if sess else None,
         policy=sess.policy if sess else None)

    latencies, status = [], 0
    with torch.no_grad():
        for i in range(args.requests):
            if i:
                time.sleep(args.pause_ms / 1000.0)
            x = requests[i % len(requests)]
            t0 = time.perf_counter()
            try:
                with (sess.iteration() if sess else contextlib.nullcontext()):
                    top = int(model(x).argmax(dim=1).item())
            except Exception as e:
                if sess is None or not isinstance(e, salus_client.DaemonGone):
                    raise
                emit(ev="daemon_gone", i=i, error=str(e))
                sess.close(finished=False)
                sess, status = None, 3
                break
            dt = time.perf_counter() - t0
            latencies.append(dt)
            emit(ev="request", i=i, s=round(dt, 6), wait_us=sess.last_wait_us if sess else None, top=top)
    if sess:
        sess.close()
    emit(ev="done", model=args.model, kind="infer", requests=len(latencies),
         median_s=round(statistics.median(latencies), 6) if latencies else None)
    return status


if __name__ == "__main__":
    sys.exit(main())
