#!/usr/bin/python3
"""Seed-by-seed differences between schemes of a salus sweep, with 95% intervals.

docs/gpus.md's table of paired differences comes from this script:

    /usr/bin/python3 examples/gpus/paired.py results/gpus-openb results/gpus-tiresias results/gpus-salus100

For each sweep folder it reads samples.jsonl (one line a run: a cell and a seed), pairs the
runs of two schemes on the same seed, and prints the mean difference of each metric in
minutes with a percentile bootstrap interval of the paired differences (10,000 resamples,
seed 1). Standard library only. A scheme is its policy, with ", migrate" where the run moved
jobs between GPUs (salus sweep --migrate on).
"""
import json
import random
import sys

PAIRS = [("srtf", "fifo"), ("srtf, migrate", "srtf"), ("srtf, migrate", "fifo"), ("pack, migrate", "pack")]
METRICS = [("makespan", "makespan_s"), ("p95 JCT", "p95_jct_s"), ("avg JCT", "avg_jct_s")]


def scheme(run):
    return run["policy"] + (", migrate" if run.get("migrate") else "")


def interval(diffs, resamples=10000, seed=1):
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def main(folders):
    print("| sweep | difference | " + " | ".join(name for name, _ in METRICS) + " |")
    print("| --- | --- |" + " --- |" * len(METRICS))
    for folder in folders:
        runs = {}
        with open(folder + "/samples.jsonl") as f:
            for line in f:
                run = json.loads(line)
                if run.get("metrics"):
                    runs[(scheme(run), run["seed"])] = run["metrics"]
        for a, b in PAIRS:
            seeds = sorted(s for (sc, s) in runs if sc == a and (b, s) in runs)
            if not seeds:
                continue
            cells = []
            for _, key in METRICS:
                diffs = [(runs[(a, s)][key] - runs[(b, s)][key]) / 60 for s in seeds]
                lo, hi = interval(diffs)
                mean = sum(diffs) / len(diffs)
                cell = "%+.1f [%+.1f, %+.1f]" % (mean, lo, hi)
                cells.append("**" + cell + "**" if lo > 0 or hi < 0 else cell)
            print("| %s | %s - %s (%d seeds) | %s |" % (folder, a, b, len(seeds), " | ".join(cells)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: paired.py SWEEP_FOLDER...")
    main(sys.argv[1:])
