"""A job's session with the salus daemon.

::

    sess = salus_client.Session(name="resnet18", total_time=600, persistent=500, ephemeral=1500)
    for batch in loader:
        with sess.iteration():
            step(batch)
    sess.close()

The session is opened when it is created (the constructor returns once the daemon
admitted the job into a lane), except when its memory is to be measured (CUDA, no
figures given): then its first ``measure_iterations`` iterations run ungated while
the allocator statistics are read, and the session opens with the measured figures.

It is closed by :meth:`Session.close`, by leaving a ``with Session(...)`` block (as
not finished when an exception is leaving it), at interpreter exit, and on SIGTERM or
SIGINT (then not finished; the previous handlers run afterwards).
"""

import atexit
import signal
import sys
import threading
import time
import weakref

from . import gpu
from .errors import DaemonGone, SalusError
from .protocol import VERSION, Connection, resolve_token

_live = weakref.WeakSet()  # sessions not yet closed, for atexit and the signal handlers
_hooks_lock = threading.Lock()
_hooks_installed = False
_previous_handlers = {}


class Session:
    """One job's session: open, then one ``iteration()`` per training step, then close.

    Parameters (memory in MiB, times in seconds):

    - ``name``: the job's unique name.
    - ``total_time``: the job's declared GPU time: how long its iterations take on the GPU
      alone, start-up excluded (what SRTF orders by). A missing value is never taken as
      zero: under a policy that needs it (``srtf``) the daemon estimates it as
      ``iterations`` x the catalog's iteration time when ``model`` and ``iterations`` are
      given, and otherwise refuses the open (:class:`Rejected`, saying what to send).
    - ``persistent``, ``ephemeral``: the job's memory: the floor that stays allocated
      between iterations, and the peak above it inside one. On CUDA, when neither is
      given (nor ``model``), they are measured over the first ``measure_iterations``
      iterations; on CPU they must be declared (or ``model`` given).
    - ``model``: a catalog profile name; the daemon fills what is not given from it.
    - ``address``: the daemon: a socket path, ``unix:PATH``, ``HOST:PORT``; default
      ``$SALUS_ADDR``, then ``/tmp/salus.sock``.
    - ``token``, ``token_file``: the daemon's token, which an open over TCP must carry
      (the Unix socket needs none: its permissions are the check); default
      ``$SALUS_TOKEN``, then the file ``$SALUS_TOKEN_FILE`` names.
    - ``priority``, ``kind`` (``"train"``, the daemon's default, or ``"infer"``), ``iterations`` and
      ``startup`` (planned; logged only).
    - ``release_cache``: on CUDA, empty the allocator's cache at the end of every
      iteration. ``None`` (default) does it when the daemon asks (an optional
      ``release_cache`` field in the open or begin reply).
    - ``cap_memory``: on CUDA, cap the process's allocator to its lane (default True).
    - ``heartbeat``: send heartbeats every ``lease_ms / 3`` while the session is open
      (default True; turning it off is for tests).
    - ``connect_timeout``: seconds to wait for the connection (not for admission).

    Raises :class:`DaemonUnavailable` when no daemon listens at the address,
    :class:`Rejected` when the daemon refuses the job, and :class:`Unauthorized` (a
    ``Rejected``) when an open over TCP lacks the daemon's token.
    """

    def __init__(self, name, total_time=None, persistent=None, ephemeral=None, model=None,
                 address=None, priority=None, kind=None, iterations=None, startup=None,
                 measure_iterations=3, release_cache=None, cap_memory=True, heartbeat=True,
                 connect_timeout=5.0, token=None, token_file=None):
        if not name:
            raise ValueError("Session needs a name= (the job's unique name)")
        self.name = str(name)
        self.cuda = gpu.cuda_available()
        self._open_fields = dict(
            version=VERSION, job=self.name, model=model,
            persistent_mib=_num(persistent), ephemeral_mib=_num(ephemeral),
            declared_s=_num(total_time), priority=priority, kind=kind,
            iterations=iterations, startup_s=_num(startup),
            token=resolve_token(token, token_file))
        declared = persistent is not None or ephemeral is not None or model is not None
        if not declared and not self.cuda:
            raise ValueError(
                "Session %r: declare its memory (persistent= and ephemeral=, MiB) or give "
                "model=; memory is measured only on CUDA" % self.name)
        self._measure = None if declared else gpu.MemoryMeter()
        self._measure_n = max(1, int(measure_iterations))
        self._release_cache = release_cache
        self._cap_memory = cap_memory
        self._heartbeat = heartbeat

        self.lane = None
        self.lane_mib = None
        self.lease_ms = None
        self.policy = None
        self.startup_on_gpu = False
        self.memory_fraction = None
        self.iterations_done = 0
        self.last_wait_us = None
        self.last_duration_s = None
        self.closed = False
        self.finished = None
        self._release_now = False
        self._hb_stop = threading.Event()
        self._hb_thread = None
        self._hb_error = None
        self._in_request = False

        self._conn = Connection(address, connect_timeout=connect_timeout)
        _install_hooks()
        _live.add(self)
        if self._measure is None:
            try:
                self._open()
            except BaseException:
                self.closed = True
                _live.discard(self)
                self._conn.close()
                raise

    # -- lifecycle ------------------------------------------------------------

    @property
    def opened(self):
        """True once the daemon admitted the job (lane assigned)."""
        return self.lane is not None

    @property
    def address(self):
        """The daemon's address, as text."""
        return self._conn.where

    def _request(self, op, **fields):
        if self._hb_error is not None:
            self._conn.close()
            raise DaemonGone("%s (noticed by the heartbeat of session %r)"
                             % (self._hb_error, self.name), code="gone")
        self._in_request = True
        try:
            return self._conn.request(op, **fields)
        finally:
            self._in_request = False

    def _open(self):
        reply = self._request("open", **self._open_fields)
        self.lane = reply.get("lane")
        self.lane_mib = reply.get("lane_mib")
        self.lease_ms = reply.get("lease_ms")
        self.policy = reply.get("policy")
        self.startup_on_gpu = bool(reply.get("startup_on_gpu"))
        if self._release_cache is None:
            self._release_default = bool(reply.get("release_cache", False))
        else:
            self._release_default = bool(self._release_cache)
        if self.cuda and self._cap_memory and self.lane_mib:
            self.memory_fraction = gpu.cap_to_lane(self.lane_mib)
        if self._heartbeat and self.lease_ms:
            self._hb_thread = threading.Thread(
                target=self._heartbeats, args=(max(0.01, self.lease_ms / 3000.0),),
                name="salus-heartbeat-%s" % self.name, daemon=True)
            self._hb_thread.start()

    def _heartbeats(self, interval):
        while not self._hb_stop.wait(interval):
            try:
                self._conn.send_nowait({"op": "heartbeat"})
            except SalusError as e:
                self._hb_error = e
                return

    def iteration(self):
        """Return a context manager around one training step.

        Entering waits until the daemon lets the job run (``begin``); leaving reports
        the iteration's end (``end``) with its measured duration. On CUDA, leaving
        first waits for the step's kernels. An exception inside the step still ends
        the iteration (so the lane is not held) and then propagates.
        """
        if self.closed:
            raise SalusError("session %r is closed: open a new Session" % self.name, code="closed")
        return _Iteration(self)

    def close(self, finished=True):
        """Close the session (idempotent). ``finished=False`` logs the job as lost.

        Errors while closing (the daemon already gone) are swallowed: the session is
        over either way. Returns True when the daemon acknowledged the close.
        """
        if self.closed:
            return False
        self.closed = True
        self.finished = bool(finished)
        self._hb_stop.set()
        _live.discard(self)
        acknowledged = False
        try:
            if not self._conn.closed:
                self._request("close", finished=bool(finished))
                acknowledged = True
        except SalusError:
            pass
        finally:
            self._conn.close()
        if self._hb_thread is not None and self._hb_thread is not threading.current_thread():
            self._hb_thread.join(timeout=1.0)
        return acknowledged

    def _abort(self):
        """Close from a signal handler: a clean close when no request is outstanding,
        else just drop the connection (the daemon then loses the session)."""
        if self.closed:
            return
        if self._in_request:
            self.closed = True
            self.finished = False
            self._hb_stop.set()
            _live.discard(self)
            self._conn.close()
        else:
            self.close(finished=False)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(finished=exc_type is None)
        return False

    def __repr__(self):
        state = "closed" if self.closed else ("open" if self.opened else "measuring")
        return "<salus Session %r %s lane=%r policy=%r at %s>" % (
            self.name, state, self.lane, self.policy, self.address)


class _Iteration:
    """The context manager ``Session.iteration()`` returns (a class: it is on the hot path)."""

    __slots__ = ("s", "t0", "measuring")

    def __init__(self, s):
        self.s = s
        self.t0 = 0.0
        self.measuring = False

    def __enter__(self):
        s = self.s
        self.measuring = not s.opened
        if self.measuring:
            s._measure.before()
        else:
            reply = s._request("begin")
            s.last_wait_us = reply.get("wait_us")
            s._release_now = bool(reply.get("release_cache", s._release_default))
            if s.cuda:
                gpu.reset_peak()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        s = self.s
        if s.cuda:
            try:
                gpu.synchronize()
            except Exception:
                if exc_type is None:
                    raise
        duration = time.perf_counter() - self.t0
        s.last_duration_s = duration
        if self.measuring:
            s._measure.after()
            s.iterations_done += 1
            if exc_type is None and s._measure.samples >= s._measure_n:
                s._open_fields["persistent_mib"] = round(s._measure.persistent_mib, 3)
                s._open_fields["ephemeral_mib"] = round(s._measure.ephemeral_mib, 3)
                s._open()
            return False
        if exc_type is not None and issubclass(exc_type, DaemonGone):
            return False
        peak = None
        if s.cuda:
            peak = round(gpu.peak_mib(), 3)
            if s._release_now:
                gpu.release_cached()
        try:
            s._request("end", duration_s=duration, peak_mib=peak)
        except SalusError:
            if exc_type is None:
                raise
            return False  # the step's own exception matters more
        s.iterations_done += 1
        return False


def _num(x):
    return None if x is None else float(x)


# -- process hooks -------------------------------------------------------------


def _install_hooks():
    """Install, once, the atexit hook and the SIGTERM/SIGINT handlers (main thread only)."""
    global _hooks_installed
    with _hooks_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
        atexit.register(_close_all_at_exit)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                _previous_handlers[sig] = signal.getsignal(sig)
                signal.signal(sig, _on_signal)
            except (ValueError, OSError):
                pass


def _close_all_at_exit():
    # An uncaught exception ending the program leaves sys.last_value (or last_exc) set.
    failed = hasattr(sys, "last_value") or hasattr(sys, "last_exc")
    for s in list(_live):
        s.close(finished=not failed)


def _on_signal(signum, frame):
    for s in list(_live):
        try:
            s._abort()
        except Exception:
            pass
    prev = _previous_handlers.get(signum)
    if callable(prev):
        return prev(signum, frame)
    if prev == signal.SIG_IGN:
        return None
    # The default action (terminate): restore it and deliver the signal again.
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
    return None
