#!/usr/bin/env python3
"""Write a made-up Microsoft Philly cluster_job_log (the JSON array that
`salus trace import --format philly` reads): jobs of 1 to 128 GPUs in powers of
two, submitted at exponential gaps, each with one attempt of an exponential
length. It is not the trace and says nothing about it: a workload of its shape
(gangs up to 128 GPUs) for measuring the simulator when the log is not at hand.
The same arguments give the same file (standard library only).

    python3 examples/traces/philly_synth.py --jobs 100000 --seed 1 > philly100k.json
    salus trace import --format philly philly100k.json --out philly100k.csv
    salus simulate --trace philly100k.csv --gpus 512 --mode exclusive --policy fifo
"""
import argparse
import datetime
import json
import random
import sys

# Share of jobs by GPU count: most jobs take one GPU, few take a whole rack.
SIZES = [(1, 0.70), (2, 0.08), (4, 0.09), (8, 0.09), (16, 0.025), (32, 0.01), (64, 0.004), (128, 0.001)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, required=True, help="how many jobs")
    ap.add_argument("--seed", type=int, default=1, help="the random seed")
    ap.add_argument("--mean-gap", type=float, default=20.0, help="mean seconds between submissions")
    ap.add_argument("--mean-run", type=float, default=1800.0, help="mean seconds a job runs")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    counts, weights = zip(*SIZES)
    t0 = datetime.datetime(2017, 10, 3)
    t = 0.0
    out = sys.stdout
    out.write("[\n")
    for i in range(a.jobs):
        t += rng.expovariate(1 / a.mean_gap)
        k = rng.choices(counts, weights)[0]
        run = 60 + rng.expovariate(1 / a.mean_run)
        sub = t0 + datetime.timedelta(seconds=int(t))
        start = sub + datetime.timedelta(seconds=1)
        end = start + datetime.timedelta(seconds=int(run))
        fmt = "%Y-%m-%d %H:%M:%S"
        gpus = [f"gpu{g}" for g in range(min(k, 8))]
        detail = [{"ip": f"m{n}", "gpus": gpus} for n in range(max(k // 8, 1))]
        job = {"status": "Pass", "vc": "vc0", "jobid": f"application_{i}",
               "attempts": [{"start_time": start.strftime(fmt), "end_time": end.strftime(fmt), "detail": detail}],
               "submitted_time": sub.strftime(fmt), "user": "u0"}
        out.write(("," if i else "") + json.dumps(job) + "\n")
    out.write("]\n")


if __name__ == "__main__":
    main()
