"""A job's session with the salus daemon.

::

    sess = salus_client.Session(name="resnet18", total_time=600, persistent=500, ephemeral=1500)
    for batch in sess.iterate(loader):   # or: for batch in loader: with sess.iteration(): ...
        step(batch)
    sess.close()

The session is opened when it is created (the constructor returns once the daemon
admitted the job into a lane), except when its memory is to be measured (CUDA, no
figures given): then its first ``measure_iterations`` iterations run ungated while
the allocator statistics are read, and the session opens with the measured figures.

It is closed by :meth:`Session.close`, by leaving a ``with Session(...)`` block (as
not finished when an exception is leaving it), at interpreter exit, and on SIGTERM or
SIGINT (then not finished; the previous handlers run afterwards). A signal the process
was started with ignored (a background job of a shell, a launcher's child) stays
ignored: the client installs no handler for it, so a Ctrl-C meant for the launcher
does not end jobs that carry on.

When the connection drops without a word from the daemon (no ``shutdown`` or
``lost`` code: it crashed or was killed), the session reconnects with backoff (50 ms,
doubling to 2 s) for the daemon's recover window and re-opens with ``resume``: a
daemon restarted on its event log gives the session back with its arrival and
attained GPU time. The resume presents the session's resume token, which the client
chooses at random before its first open and sends with it: the daemon gives a recovered
session back only to whoever presents it (a stranger gets ``resume_denied``). If the daemon
stays away, ``on_daemon_gone="continue"`` carries on without it (iterations run ungated);
the default raises :class:`DaemonGone`.
"""

import atexit
import math
import os
import re
import secrets
import signal
import sys
import threading
import time
import warnings
import weakref

from . import gpu
from .errors import DaemonGone, DaemonUnavailable, Rejected, SalusError
from .protocol import VERSION, Connection, resolve_token

_live = weakref.WeakSet()  # sessions not yet closed, for atexit and the signal handlers
_hooks_lock = threading.Lock()
_hooks_installed = False
_previous_handlers = {}


class Session:
    """One job's session: open, then one iteration per training step (``iterate(loader)`` or
    ``with iteration():``), then close.

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
      ``$SALUS_ADDR``, then the default socket (``salus_client.default_socket()``, or
      ``/run/salus/salus.sock`` of a daemon run by root); a socket another user serves
      is refused before anything is sent (Linux).
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
    - ``reconnect``: seconds to try to reconnect when the connection drops without a
      word from the daemon. ``None`` (default) takes the daemon's recover window from
      its open reply (``recover_ms``; a daemon without one is not reconnected to, nor
      is one that goes away before the open reply); a number above 0 tries that long,
      also while the open waits; 0 never reconnects.
    - ``label``: the model's name for the daemon's log (and ``salus profile``) when its
      memory is declared or measured rather than taken from the catalog: sent as
      ``model`` with the memory figures, so the daemon takes it as a label only.
    - ``batch_size``: the job's batch size, logged by the daemon (``salus profile`` keys
      its catalog entries by model, batch size and kind).
    - ``report_after``: after this many iterations under the daemon (default 5; 0 never),
      report what the client measured (the ``measured`` op, when the daemon's open reply
      says ``accepts_measured``): the median iteration time (the first iteration left out
      as warm-up) and, on CUDA, the peak memory inside an iteration
      (``torch.cuda.max_memory_allocated``) and the memory held between iterations
      (``torch.cuda.memory_allocated``). A session closed before that many reports what it
      has. The daemon logs the figures as the client's; it schedules by its own clock.
      ``measured`` holds what was reported (None before).
    - ``gpus``: how many GPUs the job needs at once (default 1). More than one is a gang:
      the daemon gives the job that many GPUs of its node together, as one session.
    - ``select_gpu``: make the GPU(s) the daemon gave the job its device(s) (default
      True): before CUDA starts, ``CUDA_VISIBLE_DEVICES`` is set to their physical
      indices, so the job's first GPU is ``cuda:0`` (see ``device``); when the program
      initialized CUDA before the session opened, ``torch.cuda.set_device`` selects it
      instead, with a warning (or, when the job already holds tensors on another GPU, it
      stays there rather than be split across two, with a warning). The client says which GPU on stderr. Nothing is done
      when the daemon emulates the GPU or does not name one. Create the Session before
      touching CUDA (even ``torch.cuda.is_available()``), so that the mask applies.
    - Not given, ``total_time``, ``persistent``, ``ephemeral``, ``priority`` and ``gpus``
      are read from ``$SALUS_DECLARED_S``, ``$SALUS_PERSISTENT_MIB``, ``$SALUS_EPHEMERAL_MIB``,
      ``$SALUS_PRIORITY`` and ``$SALUS_GPUS`` when set (a Kubernetes claim's configuration
      puts them there), as the address comes from ``$SALUS_ADDR`` and the token from
      ``$SALUS_TOKEN_FILE``. ``$SALUS_CLAIM`` (the claim's UID) is sent with the open, with
      the claim's secret from ``$SALUS_CLAIM_SECRET`` (the DRA driver sets both): the daemon
      then runs the job on the claim's GPU, within the claim's memory, and refuses an open
      naming the claim without its secret (:class:`PermissionDenied`, ``claim_denied``).
    - ``iter_time`` and ``demand``: what one iteration costs on the reference P100, in
      seconds alone, and the share of the GPU it keeps busy (0 to 1). Only a daemon that
      emulates its GPU (``salus serve --emulate p100``, for machines without one) needs
      them, to time the iteration on its device model; a catalog ``model=`` (with its
      ``batch_size=``) gives them instead. A daemon on a real GPU ignores them.
    - ``share``: the job's scheduling weight under the ``wfair`` and ``floor`` policies:
      its share of the GPU's time beside the others (relative: 1 and 3 get time 1:3),
      0.001 to 1000; default 1. Not its compute ``demand``. Under a Kubernetes claim the
      daemon uses the claim's share (and its declared time and priority), whatever is sent.
    - ``on_daemon_gone``: ``"stop"`` (default) raises :class:`DaemonGone` when the
      daemon went away and did not come back; ``"continue"`` carries on alone: the
      remaining iterations run ungated, ``alone`` is True, ``close`` does nothing.

    Raises :class:`DaemonUnavailable` when no daemon listens at the address,
    :class:`Rejected` when the daemon refuses the job, and :class:`Unauthorized` (a
    ``Rejected``) when an open over TCP lacks the daemon's token.
    """

    def __init__(self, name, total_time=None, persistent=None, ephemeral=None, model=None,
                 address=None, priority=None, kind=None, iterations=None, startup=None,
                 measure_iterations=3, release_cache=None, cap_memory=True, heartbeat=True,
                 connect_timeout=5.0, token=None, token_file=None, reconnect=None,
                 on_daemon_gone="stop", batch_size=None, report_after=5, label=None,
                 gpus=None, select_gpu=True, iter_time=None, demand=None, share=None):
        if not name:
            raise ValueError("Session needs a name= (the job's unique name)")
        if on_daemon_gone not in ("stop", "continue"):
            raise ValueError("on_daemon_gone=%r: use \"stop\" or \"continue\"" % (on_daemon_gone,))
        self.name = str(name)
        # Figures not given come from the environment, where a Kubernetes claim's
        # configuration puts them (the CDI edits of package dra, docs/kubernetes.md).
        total_time = _from_env(total_time, "SALUS_DECLARED_S", float)
        persistent = _from_env(persistent, "SALUS_PERSISTENT_MIB", float)
        ephemeral = _from_env(ephemeral, "SALUS_EPHEMERAL_MIB", float)
        priority = _from_env(priority, "SALUS_PRIORITY", int)
        gpus = _from_env(gpus, "SALUS_GPUS", int)
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
            raise ValueError("Session %r: gpus=%r: give how many GPUs the job needs at once (1, or more "
                             "for a gang)" % (self.name, gpus))
        self._open_fields = dict(
            version=VERSION, job=self.name, model=model,
            persistent_mib=_num(persistent), ephemeral_mib=_num(ephemeral),
            declared_s=_num(total_time), priority=priority, kind=kind,
            iterations=iterations, startup_s=_num(startup),
            iter_s=_num(iter_time), demand=_num(demand), share=_num(share),
            batch_size=None if batch_size is None else int(batch_size),
            token=resolve_token(token, token_file),
            gpus=gpus if gpus is not None and gpus > 1 else None,
            claim=os.environ.get("SALUS_CLAIM") or None,
            # What a resume after a daemon restart presents: chosen here, sent with the first
            # open too, so the session can be resumed even if the daemon died before answering.
            resume_token=secrets.token_hex(32))
        if self._open_fields["claim"]:
            self._open_fields["claim_secret"] = (os.environ.get("SALUS_CLAIM_SECRET") or "").strip() or None
        declared = persistent is not None or ephemeral is not None or model is not None
        # Asking torch whether CUDA is there may start CUDA, after which the GPU the
        # daemon gives cannot be masked: with memory declared, ask after the open, and
        # only once the program imported torch (see the cuda property).
        self._cuda = None if declared else gpu.cuda_available()
        if not declared and not self._cuda:
            raise ValueError(
                "Session %r: declare its memory (persistent= and ephemeral=, MiB) or give "
                "model=; memory is measured only on CUDA" % self.name)
        self._measure = None if declared else gpu.MemoryMeter()
        self._label = None if model is not None or label is None else str(label)
        self._measure_n = max(1, int(measure_iterations))
        self._release_cache = release_cache
        self._cap_memory = cap_memory
        self._heartbeat = heartbeat
        self._address = address
        self._connect_timeout = connect_timeout
        self._reconnect = reconnect
        self._on_daemon_gone = on_daemon_gone
        self._select_gpu = select_gpu
        self.gpus = []  # the physical GPU indices the daemon gave the job
        self._device = None  # "cuda:0" once the given GPU is the job's device (device)
        self.emulated = False
        self.recover_ms = 0
        self.resumed = False
        self.alone = False
        self.accepts_measured = False
        self.measured = None
        self._report_after = max(0, int(report_after))
        self._durations = []  # the client's times of the iterations under the daemon, until reported
        self._peak_mib = 0.0
        self._persistent_mib = 0.0

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
        self._release_default = False
        self._hb_stop = threading.Event()
        self._hb_thread = None
        self._hb_error = None
        self._in_request = False
        self._gate = None  # the iteration iterate() began for the current loop body

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
        if self.alone:
            return {}
        failure = self._hb_error
        if failure is not None:
            self._hb_error = None
            self._conn.close()
            if failure.code != "gone":
                raise type(failure)("%s (noticed by the heartbeat of session %r)" % (failure, self.name),
                                    code=failure.code)
        else:
            self._in_request = True
            try:
                return self._conn.request(op, **fields)
            except DaemonGone as e:
                if e.code != "gone":  # the daemon said why (shutdown, lost): that is final
                    raise
                failure = e
            finally:
                self._in_request = False
        return self._after_drop(op, fields, failure)

    def _after_drop(self, op, fields, failure):
        """The connection dropped without a word: reconnect and resume, then finish
        what ``op`` asked of the resumed session; or go on alone; or raise."""
        window = self._reconnect
        if window is None:
            window = self.recover_ms / 1000.0 if self.opened else 0
        if window and window > 0:
            try:
                reply = self._resume(window)
            except DaemonGone as e:
                if e.code != "gone":
                    raise
                failure = e  # the daemon stayed away
            else:
                if op == "open":
                    return reply
                self._admitted(reply)
                if op == "end":
                    return {}  # the iteration ran; the resumed session is between iterations
                return self._request(op, **fields)
        if self._on_daemon_gone == "continue" and op != "close":
            self._go_alone()
            return {}
        self._conn.close()  # given up: a later close does not wait for the daemon again
        raise failure

    def _resume(self, window):
        """Dial again with backoff for up to ``window`` seconds and re-open with resume.
        Returns the open reply; raises what the daemon answered (``lost``: nothing to
        resume), or :class:`DaemonGone` (code ``gone``) once the window has passed."""
        deadline = time.monotonic() + window
        wait = 0.05
        while True:
            try:
                conn = Connection(self._address, connect_timeout=self._connect_timeout,
                                  expect_uid=getattr(self._conn, "peer_uid", None))
            except DaemonUnavailable as e:
                last = e
            else:
                try:
                    reply = conn.request("open", resume=True, **self._open_fields)
                except DaemonGone as e:
                    conn.close()
                    if e.code != "gone":
                        raise
                    last = e
                except BaseException:
                    conn.close()
                    raise
                else:
                    old, self._conn = self._conn, conn
                    old.close()
                    self.resumed = bool(reply.get("resumed"))
                    return reply
            left = deadline - time.monotonic()
            if left <= 0:
                raise DaemonGone("the salus daemon at %s went away and did not come back within %g s (%s)"
                                 % (self.address, window, last), code="gone")
            time.sleep(min(wait, left))
            wait = min(2 * wait, 2.0)

    def _go_alone(self):
        """Carry on without the daemon: iterations run ungated from now on."""
        self.alone = True
        self._hb_stop.set()
        self._conn.close()

    def _open(self):
        f = self._open_fields
        if self._label and (f.get("persistent_mib") is not None or f.get("ephemeral_mib") is not None):
            f["model"] = self._label
        try:
            reply = self._request("open", **f)
        except Rejected as e:
            # The daemon names protocol fields; say which of Session's arguments they are.
            raise type(e)(_in_session_terms(str(e)), code=e.code) from None
        self._admitted(reply)
        if not self.alone:
            self._use_gpus()
        if self.cuda:
            self._cap()

    @property
    def device(self):
        """The job's device: "cuda:0" (or "cuda:N") once the GPU the daemon gave it is
        its device; None when it was given none, when the daemon emulates the GPU, and
        when the PyTorch the program imported before the session has no CUDA (a CPU
        build), so that ``model.to(sess.device or "cpu")`` runs wherever the job can."""
        return self._device

    @property
    def cuda(self):
        """True when the program runs PyTorch on CUDA. A program that imports torch only
        after the session opened (so that the GPU mask applies) is seen to at its first
        iteration, and its allocator is capped to the lane then."""
        if self._cuda is None and gpu.torch_module() is not None:
            self._cuda = gpu.cuda_available()
            if self._cuda:
                self._cap()
        return bool(self._cuda)

    @cuda.setter
    def cuda(self, value):
        self._cuda = value

    def _cap(self):
        """Cap the process's allocator to its lane, once (cap_memory)."""
        if self._cap_memory and self.lane_mib and self.memory_fraction is None:
            self.memory_fraction = gpu.cap_to_lane(self.lane_mib)

    def _admitted(self, reply):
        """Take in an open reply (the first, or a resume's); start the heartbeats."""
        if self.alone:
            return
        self.lane = reply.get("lane")
        self.lane_mib = reply.get("lane_mib")
        self.lease_ms = reply.get("lease_ms")
        self.policy = reply.get("policy")
        self.startup_on_gpu = bool(reply.get("startup_on_gpu"))
        self.recover_ms = reply.get("recover_ms") or 0
        self.accepts_measured = bool(reply.get("accepts_measured"))
        self.emulated = bool(reply.get("emulated"))
        given = [int(g) for g in reply.get("gpus") or []]
        if self._device is not None and given and given != self.gpus:
            _say("job %r: the resumed session is on GPU %s, but the job runs on GPU %s already "
                 "and stays there" % (self.name, _gpu_list(given), _gpu_list(self.gpus)))
        else:
            self.gpus = given
        if self._release_cache is None:
            self._release_default = bool(reply.get("release_cache", False))
        else:
            self._release_default = bool(self._release_cache)
        alive = self._hb_thread is not None and self._hb_thread.is_alive()
        if self._heartbeat and self.lease_ms and not alive:
            self._hb_thread = threading.Thread(
                target=self._heartbeats, args=(max(0.01, self.lease_ms / 3000.0),),
                name="salus-heartbeat-%s" % self.name, daemon=True)
            self._hb_thread.start()

    def _use_gpus(self):
        """Make the GPU(s) the daemon gave the job its device(s), and say so."""
        if not self.gpus or self.emulated or not self._select_gpu:
            return
        if gpu.torch_without_cuda():
            # A CPU build of torch has no CUDA device to be: device stays None, so
            # that model.to(sess.device or "cpu") runs on the CPU.
            _say("job %r was given GPU %s, but this PyTorch has no CUDA: it runs on the CPU"
                 % (self.name, _gpu_list(self.gpus)))
            return
        how, device, note = gpu.use_gpus(self.gpus)
        self._device = device
        what = "GPUs" if len(self.gpus) > 1 else "GPU"
        if how == "CUDA_VISIBLE_DEVICES":
            msg = "job %r runs on %s %s: CUDA_VISIBLE_DEVICES=%s, device %s" % (
                self.name, what, _gpu_list(self.gpus), _gpu_list(self.gpus), device)
        elif how == "set_device":
            msg = "job %r runs on %s %s: device %s" % (self.name, what, _gpu_list(self.gpus), device)
        else:
            msg = "job %r was given %s %s" % (self.name, what, _gpu_list(self.gpus))
        _say(msg + ("; " + note if note else ""))

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

    def iterate(self, iterable):
        """Yield the items of ``iterable`` (a data loader, a range), each inside one
        iteration, so that a training loop needs no re-indentation::

            for batch in sess.iterate(loader):
                step(batch)

        is ``for batch in loader: with sess.iteration(): step(batch)``: the next item
        is taken from ``iterable`` outside the gate (loading the data holds no lane),
        then the iteration begins (waiting for the daemon's grant), then the item is
        yielded; the iteration ends when the loop asks for the next item, when it
        stops (``break``, ``return``) or when an exception leaves its body. An error
        reporting that last end is not raised: the loop's own exit matters more, and
        the session's next call reports a daemon that went away.

        The whole loop body is the gated step. Work that is not part of the step
        (evaluation, checkpointing, logging every N iterations) should not hold the
        lane: call :meth:`end_iteration` first, and the rest of the body runs ungated.

        Use the returned iterator directly in the ``for`` statement: a loop left by
        ``break`` ends its iteration when the iterator is dropped (or ``close()``d).
        """
        if self.closed:
            raise SalusError("session %r is closed: open a new Session" % self.name, code="closed")
        return self._iterate(iter(iterable))

    def _iterate(self, items):
        for item in items:
            gate = self.iteration()
            gate.__enter__()
            self._gate = gate
            try:
                yield item
            except BaseException as e:  # GeneratorExit (break, a dropped loop) or thrown in
                if self._gate is gate:
                    self._gate = None
                    if not self.closed:
                        gate.__exit__(type(e), e, e.__traceback__)
                raise
            if self._gate is gate:
                self._gate = None
                if not self.closed:
                    gate.__exit__(None, None, None)

    def end_iteration(self):
        """End, now, the iteration that :meth:`iterate` began for the current loop
        body; the rest of the body runs ungated (evaluation, checkpointing). Returns
        False when no such iteration is open (already ended, or not inside
        ``iterate``)."""
        gate, self._gate = self._gate, None
        if gate is None or self.closed:
            return False
        gate.__exit__(None, None, None)
        return True

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
            if not self._conn.closed and not self.alone:
                self._report()
                self._request("close", finished=bool(finished))
                acknowledged = True
        except SalusError:
            pass
        finally:
            self._conn.close()
        if self._hb_thread is not None and self._hb_thread is not threading.current_thread():
            self._hb_thread.join(timeout=1.0)
        return acknowledged

    def _note(self, duration):
        """Take in one iteration under the daemon: its time and, on CUDA, its memory;
        report once ``report_after`` of them ran."""
        if self.measured is not None or self._report_after == 0:
            return
        self._durations.append(duration)
        if self.cuda:
            try:
                self._peak_mib = max(self._peak_mib, gpu.peak_mib())
                self._persistent_mib = max(self._persistent_mib, gpu.allocated_mib())
            except Exception:
                pass
        if len(self._durations) >= self._report_after:
            self._report()

    def _report(self):
        """Send the measurement (once), if the daemon takes it and there is one. A
        refusal never stops the job: the figures were only for the daemon's log."""
        if self.measured is not None or not self._durations or not self.accepts_measured or self.alone:
            return
        fields = measurement(self._durations, self._peak_mib if self.cuda else 0.0,
                             self._persistent_mib if self.cuda else 0.0)
        self.measured = fields
        try:
            self._request("measured", **fields)
        except DaemonGone:
            raise
        except SalusError as e:
            warnings.warn("salus: the daemon refused session %r's measurement: %s" % (self.name, e))

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
        self.measuring = not s.opened and not s.alone
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
        if exc_type is None:
            try:
                s._note(duration)
            except SalusError:
                pass  # the next request reports a daemon that went away
        return False


def measurement(durations, peak_mib=0.0, persistent_mib=0.0):
    """The ``measured`` request's fields for the client's iteration times (seconds) and
    memory (MiB; 0: not measured): the median time, the first iteration left out as
    warm-up when there are more. Figures that are not finite are left out."""
    xs = sorted(durations[1:] if len(durations) > 1 else durations)
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2.0
    fields = {"iterations": len(durations)}
    if math.isfinite(med) and med > 0:
        fields["iter_s"] = round(med, 9)
    for key, v in (("peak_mib", peak_mib), ("persistent_mib", persistent_mib)):
        if v and math.isfinite(v) and v > 0:
            fields[key] = round(v, 3)
    if fields.get("persistent_mib", 0) > fields.get("peak_mib", float("inf")):
        fields["persistent_mib"] = fields["peak_mib"]
    return fields


def _num(x):
    return None if x is None else float(x)


# The open's protocol fields, as Session's arguments name them.
_SESSION_NAMES = {"declared_s": "total_time=", "persistent_mib": "persistent=", "ephemeral_mib": "ephemeral=",
                  "iter_s": "iter_time=", "startup_s": "startup=", "demand": "demand=", "batch_size": "batch_size=",
                  "share": "share="}


def _in_session_terms(msg):
    """msg with each protocol field it names followed by the Session argument it is."""
    for field, arg in _SESSION_NAMES.items():
        msg, n = re.subn(r"\b%s\b" % field, "%s (Session's %s)" % (field, arg), msg, count=1)
    return msg


def _from_env(value, var, kind):
    """value, or when it is None the environment variable var read as kind (float or
    int); None when that is not set either."""
    if value is not None:
        return value
    text = os.environ.get(var, "").strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise ValueError("$%s=%r is not a %s: fix or unset it (or give the figure to Session)"
                         % (var, text, "whole number" if kind is int else "number"))


# -- process hooks -------------------------------------------------------------


def _install_hooks():
    """Install, once, the atexit hook and the SIGTERM/SIGINT handlers (main thread only;
    not for a signal that is ignored)."""
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
                prev = signal.getsignal(sig)
                if prev is signal.SIG_IGN:
                    # Started with it ignored (a shell's background job, a launcher's
                    # child): the signal is meant for someone else; leave it ignored.
                    continue
                _previous_handlers[sig] = prev
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


def _gpu_list(gpus):
    return ",".join(str(g) for g in gpus)


def _say(msg):
    """One line on stderr: what the client did with the job's GPU."""
    try:
        sys.stderr.write("salus: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass
