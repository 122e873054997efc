"""What the client does with the GPU, through PyTorch when the program uses it.

The client never imports torch itself: it looks for the module the training program
already imported (``sys.modules``), so a CPU-only or non-PyTorch program pays nothing.
All functions here are no-ops off CUDA.
"""

import os
import sys

MIB = 1024.0 * 1024.0


def torch_module():
    """Return the torch module if the program imported it, else None."""
    return sys.modules.get("torch")


def cuda_available():
    """True when the program uses PyTorch and a CUDA device is there."""
    torch = torch_module()
    try:
        return bool(torch is not None and torch.cuda.is_available())
    except Exception:  # a broken CUDA install reads as "no CUDA"
        return False


def torch_without_cuda():
    """True when the program imported a PyTorch built without CUDA (a CPU wheel, or
    Debian's python3-torch): asking costs nothing and starts no CUDA."""
    torch = torch_module()
    if torch is None:
        return False
    try:
        return getattr(getattr(torch, "version", None), "cuda", "x") is None
    except Exception:
        return False


def cuda_initialized():
    """True when the program's PyTorch has initialized CUDA already (its device mask,
    ``CUDA_VISIBLE_DEVICES``, can no longer change). False without torch."""
    torch = torch_module()
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def use_gpus(indices, environ=None):
    """Make the GPUs of physical indices ``indices`` (what the daemon gave the job) this
    process's devices. Returns ``(how, device, note)``:

    - before CUDA starts (no torch yet, or torch that has not initialized CUDA), it sets
      ``CUDA_VISIBLE_DEVICES`` to them: the job sees only its GPUs, the first as
      ``cuda:0`` (how ``"CUDA_VISIBLE_DEVICES"``, device ``"cuda:0"``);
    - once CUDA is up the mask cannot change: it calls ``torch.cuda.set_device`` with the
      first GPU's index among the visible ones (how ``"set_device"``, device
      ``"cuda:N"``), unless the program already holds tensors on another device:
      switching then would split the job across GPUs (its model on one, what it makes
      next with ``device="cuda"`` on the other), so it stays where it is;
    - it changes nothing (how ``None``, device ``None``) in that case, and when the GPU
      is not among those a mask made visible.

    ``note`` is a sentence for the log when something is worth saying, else "".
    """
    indices = [int(i) for i in indices]
    env = os.environ if environ is None else environ
    visible = ",".join(str(i) for i in indices)
    before = env.get("CUDA_VISIBLE_DEVICES")
    if not cuda_initialized():
        env["CUDA_VISIBLE_DEVICES"] = visible
        note = ""
        if before not in (None, "", visible):
            note = "replacing CUDA_VISIBLE_DEVICES=%s" % before
        return "CUDA_VISIBLE_DEVICES", "cuda:0", note
    first = indices[0]
    local = first
    if before not in (None, ""):
        masked = [x.strip() for x in before.split(",")]
        if str(first) not in masked:
            return None, None, ("CUDA is initialized already and CUDA_VISIBLE_DEVICES=%s hides GPU %d: "
                                "the job stays on its current device" % (before, first))
        local = masked.index(str(first))
    cuda = torch_module().cuda
    try:
        current = cuda.current_device()
    except Exception:
        current = None
    if current == local:
        return "set_device", "cuda:%d" % local, ""
    try:
        busy = cuda.memory_allocated() > 0
    except Exception:
        busy = False
    if busy:
        return None, None, (
            "CUDA was initialized before the session opened and the job holds tensors on cuda:%s "
            "already: it stays there rather than be split across GPUs, although the daemon gave it "
            "GPU %d (create the Session before touching CUDA)" % (current, first))
    cuda.set_device(local)
    return "set_device", "cuda:%d" % local, (
        "CUDA was initialized before the session opened, so the device mask cannot change: "
        "torch.cuda.set_device(%d) (create the Session before touching CUDA)" % local)


def synchronize():
    """Wait for the current device's queued kernels (an iteration ends when they do)."""
    torch_module().cuda.synchronize()


def allocated_mib():
    """Memory held by live tensors now, MiB."""
    return torch_module().cuda.memory_allocated() / MIB


def reset_peak():
    """Start a new peak-memory window."""
    torch_module().cuda.reset_peak_memory_stats()


def peak_mib():
    """Peak memory held by tensors since the last reset_peak, MiB."""
    return torch_module().cuda.max_memory_allocated() / MIB


def release_cached():
    """Return the caching allocator's free blocks to the device, for other lanes."""
    torch_module().cuda.empty_cache()


def cap_to_lane(lane_mib):
    """Cap this process's allocator to its lane; return the fraction set.

    ``torch.cuda.set_per_process_memory_fraction`` takes a fraction of the device's
    total memory; an allocation beyond it raises ``torch.cuda.OutOfMemoryError``.
    """
    torch = torch_module()
    total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / MIB
    fraction = max(0.0, min(1.0, float(lane_mib) / total))
    torch.cuda.set_per_process_memory_fraction(fraction)
    return fraction


class MemoryMeter:
    """Measures a job's memory over its first iterations, from allocator statistics.

    Persistent memory is the floor between iterations (weights, gradients, optimizer
    state: what stays allocated after an iteration ends); ephemeral memory is the
    peak inside an iteration above the floor it started from.
    """

    def __init__(self):
        self.persistent_mib = 0.0
        self.ephemeral_mib = 0.0
        self.samples = 0
        self._floor = 0.0

    def before(self):
        """Call just before an iteration starts."""
        self._floor = allocated_mib()
        reset_peak()

    def after(self):
        """Call just after an iteration ended (kernels synchronized)."""
        self.ephemeral_mib = max(self.ephemeral_mib, peak_mib() - self._floor)
        self.persistent_mib = max(self.persistent_mib, allocated_mib())
        self.samples += 1
