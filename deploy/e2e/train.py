"""A short emulated training loop for the kind end-to-end test (kind.sh).

It runs in a pod whose claim's CDI edits set the environment the Python client
reads: the daemon's socket (SALUS_ADDR), its token (SALUS_TOKEN_FILE), the
claim's UID (SALUS_CLAIM, sent with the open: the daemon runs the job on the
claim's GPU, within its memory) with the claim's secret (SALUS_CLAIM_SECRET, without
which the daemon refuses an open naming the claim) and the claim's figures (SALUS_DECLARED_S,
SALUS_PERSISTENT_MIB, SALUS_EPHEMERAL_MIB, SALUS_PRIORITY). The daemon emulates
the GPU, so a step does no work of its own: the daemon holds each iteration's
end until its device model has done resnet50's work.

    python train.py [JOB] [ITERATIONS]
"""

import os
import sys

from salus_client import Session


def main(argv):
    job = argv[1] if len(argv) > 1 else "e2e-train"
    iterations = int(argv[2]) if len(argv) > 2 else 50
    # The claim's secret (SALUS_CLAIM_SECRET, sent with the open) is never printed.
    print("claim %s (secret %s), daemon %s" % (os.environ.get("SALUS_CLAIM", "(none)"),
                                               "set" if os.environ.get("SALUS_CLAIM_SECRET") else "missing",
                                               os.environ.get("SALUS_ADDR", "(none)")), flush=True)
    sess = Session(name=job, model="resnet50", iterations=iterations)
    for _ in sess.iterate(range(iterations)):
        pass  # the step: the emulating daemon times it
    sess.close()
    print("job %s: %d iterations on GPU %s, lane %s (%s MiB)" % (job, sess.iterations_done, sess.gpus, sess.lane,
                                                               sess.lane_mib), flush=True)
    return 0 if sess.iterations_done == iterations else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
