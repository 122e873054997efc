#!/usr/bin/python3
"""The client's own cost: empty iterations under the daemon (begin + end round trip).

    /usr/bin/python3 examples/roundtrip.py --iterations 2000 --salus /tmp/salus.sock

An empty step takes no time alone, so an iteration's wall time under the daemon is
what the daemon adds to every iteration of a real job: two framed round trips over
the socket plus the client's bookkeeping. Needs no torch. Prints JSON Lines like
train.py: ``iter`` lines (``gated`` true) and a ``done`` line with the median and p99.
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "client", "python"))

import salus_client  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--salus", required=True, metavar="ADDR")
    p.add_argument("--job", default="roundtrip-%d" % os.getpid())
    p.add_argument("--quiet", action="store_true", help="print the done line only")
    p.add_argument("--wait-go", action="store_true", help="print ready, wait for a line on stdin")
    # Accepted for symmetry with train.py (the launcher passes them); unused.
    p.add_argument("--threads", default=None)
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    if args.wait_go:
        print(json.dumps({"ev": "ready"}), flush=True)
        sys.stdin.readline()
    times = []
    with salus_client.Session(name=args.job, persistent=1, ephemeral=1, address=args.salus) as sess:
        for i in range(args.iterations):
            t0 = time.perf_counter()
            with sess.iteration():
                pass
            dt = time.perf_counter() - t0
            times.append(dt)
            if not args.quiet:
                print(json.dumps({"ev": "iter", "i": i, "s": round(dt, 7), "gated": True,
                                  "wait_us": sess.last_wait_us}))
    times.sort()
    print(json.dumps({"ev": "done", "iterations": len(times),
                      "median_s": statistics.median(times),
                      "p99_s": times[min(len(times) - 1, int(0.99 * len(times)))]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
