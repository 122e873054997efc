"""An in-process fake salus daemon speaking the fast-path protocol (docs/protocol.md).

It has one lane, grants iterations one at a time in request order, enforces the lease,
and records what every connection sent, so tests can check what the client did. It
can be told to die (close everything abruptly) after a given number of grants, to
shut down politely (unsolicited ``shutdown`` frames), to reject jobs, to ask for
cache release, to require a token at open (``token=``, as the real daemon does over
TCP), and to evict a job (an unsolicited ``evicted`` frame). With ``recover_ms`` its
open replies say it can recover sessions after a restart, and it answers an open with
``resume`` as a restarted daemon would; with ``address`` it listens on that socket path
(a daemon restarted where the last one was). With ``accepts_measured`` its open replies
say it takes the ``measured`` op, which it then answers ok; without, it answers that op
as an older daemon does (``bad_request``, unknown op). Like the real daemon it keeps each
session's resume token (``resume_tokens``, which a restarted fake may be given, as the real
one reads them from its journal) and refuses a resume without it (``resume_denied``);
``claims`` maps a claim's UID to its secret, and an open naming a claim without it is
refused (``claim_denied``).
"""

import json
import os
import socket
import struct
import tempfile
import threading
import time

_HDR = struct.Struct(">I")


class FakeDaemon:
    """Start with ``FakeDaemon().start()``; ``address`` is the socket path to give clients."""

    def __init__(self, lease_ms=10000, lane_mib=1000.0, policy="fifo", release_cache=None,
                 die_after_begins=None, reject=(), reject_why=None, tcp=False, token=None, recover_ms=None,
                 address=None, accepts_measured=False, gpus=None, emulated=False, resume_tokens=None,
                 claims=None):
        self.lease_ms = lease_ms
        self.lane_mib = lane_mib
        self.policy = policy
        self.release_cache = release_cache
        self.die_after_begins = die_after_begins
        self.reject = set(reject)
        self.reject_why = reject_why
        self.tcp = tcp
        self.token = token
        self._by_job = {}  # job -> its connection, for evict
        self.recover_ms = recover_ms
        self._fixed_address = address
        self.accepts_measured = accepts_measured
        self.gpus = gpus  # the open reply's "gpus" (physical indices), when not None
        self.emulated = emulated
        self.resume_tokens = {} if resume_tokens is None else resume_tokens  # job -> token
        self.claims = claims or {}
        self.events = []  # (job, op, request) in arrival order; heartbeats included
        self.sessions = {}  # job -> "open" | "finished" | "closed early" | "lost: reason"
        self.begins = 0
        self._lock = threading.Lock()
        self._lane = threading.Lock()  # held by the job running an iteration
        self._conns = []
        self._stopping = False
        self._dir = None

    # -- lifecycle ----------------------------------------------------------

    def start(self):
        if self.tcp:
            self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.listener.bind(("127.0.0.1", 0))
            self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        elif self._fixed_address:
            self.address = self._fixed_address
            try:
                os.unlink(self.address)  # left by a daemon that died
            except OSError:
                pass
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(self.address)
        else:
            self._dir = tempfile.mkdtemp(prefix="salus-fake-")
            self.address = os.path.join(self._dir, "salus.sock")
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(self.address)
        self.listener.listen(16)
        self._accept_thread = threading.Thread(target=self._accept, daemon=True)
        self._accept_thread.start()
        return self

    def die(self):
        """Vanish like a killed process: close the listener and every connection, no goodbye."""
        self._stopping = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.listener.close()
        except OSError:
            pass
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            _hard_close(c)

    def restart(self):
        """Stop for a restart as salus serve does on SIGTERM with a journal: an
        unsolicited restarting frame on every connection, then close; the sessions
        stay open for the next daemon."""
        self.shutdown(code="restarting", text="the daemon is restarting: reconnect and resume")

    def shutdown(self, code="shutdown", text="the daemon is shutting down"):
        """Shut down politely: an unsolicited shutdown frame on every connection, then close."""
        self._stopping = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                _send(c, {"id": 0, "ok": False, "code": code, "error": text})
            except OSError:
                pass
            _hard_close(c)

    def evict(self, job):
        """End a job's session as salus evict does: an unsolicited evicted frame, then close."""
        with self._lock:
            c = self._by_job.get(job)
        self._mark(job, "lost: evicted")
        try:
            _send(c, {"id": 0, "ok": False, "code": "evicted", "error": "session %r ended: evicted by uid 0" % job})
        except OSError:
            pass
        _hard_close(c)

    def stop(self):
        self.die()
        if self._dir:
            try:
                os.unlink(self.address)
            except OSError:
                pass
            os.rmdir(self._dir)
            self._dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- queries ------------------------------------------------------------

    def ops(self, job):
        """The ops a job sent, in order (heartbeats left out)."""
        with self._lock:
            return [op for j, op, _ in self.events if j == job and op != "heartbeat"]

    def requests(self, job, op):
        with self._lock:
            return [r for j, o, r in self.events if j == job and o == op]

    def wait_for(self, cond, timeout=60.0):
        """Wait until cond() is true; return whether it became true."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return True
            time.sleep(0.01)
        return cond()

    # -- serving ------------------------------------------------------------

    def _accept(self):
        while not self._stopping:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self._conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        job = None
        holding = False
        deadline = [None]  # lease deadline, checked by a watchdog timer
        lost = threading.Event()

        def watchdog():
            while not lost.is_set() and not self._stopping:
                d = deadline[0]
                if d is not None and time.monotonic() > d:
                    self._mark(job, "lost: lease expired")
                    lost.set()
                    try:
                        _send(c, {"id": 0, "ok": False, "code": "lost", "error": "lease expired"})
                    except OSError:
                        pass
                    _hard_close(c)
                    return
                time.sleep(0.01)

        threading.Thread(target=watchdog, daemon=True).start()
        try:
            while True:
                req = _recv(c)
                if req is None or lost.is_set():
                    break
                op = req.get("op")
                with self._lock:
                    self.events.append((job or req.get("job"), op, req))
                if job is not None:
                    deadline[0] = time.monotonic() + self.lease_ms / 1000.0
                if op == "heartbeat":
                    continue
                rid = req.get("id")
                if op == "open":
                    if self.token is not None and req.get("token") != self.token:
                        _send(c, {"id": rid, "ok": False, "code": "unauthorized",
                                  "error": "open over TCP needs the daemon's token in the field \"token\""})
                        break
                    denied = None
                    if req.get("resume") and req.get("job") in self.resume_tokens and \
                            req.get("resume_token") != self.resume_tokens[req["job"]]:
                        denied = ("resume_denied", "present the session's resume token in the field resume_token")
                    if req.get("claim") and self.claims.get(req["claim"]) != req.get("claim_secret"):
                        denied = ("claim_denied", "claim %s needs its secret: send it in the field claim_secret" % req["claim"])
                    if denied:
                        _send(c, {"id": rid, "ok": False, "code": denied[0], "error": denied[1]})
                        break
                    if req.get("job") in self.reject:
                        why = self.reject_why or "job %r cannot fit the device" % req.get("job")
                        _send(c, {"id": rid, "ok": False, "code": "rejected", "error": why})
                        continue
                    job = req["job"]
                    self._mark(job, "open")
                    with self._lock:
                        self._by_job[job] = c
                    reply = {"id": rid, "ok": True, "session": job, "lane": 0, "lane_mib": self.lane_mib,
                             "startup_on_gpu": self.policy == "fifo", "lease_ms": self.lease_ms,
                             "policy": self.policy}
                    if self.release_cache is not None:
                        reply["release_cache"] = self.release_cache
                    if self.recover_ms is not None:
                        reply["recover_ms"] = self.recover_ms
                    if req.get("resume"):
                        reply["resumed"] = True
                    else:
                        token = req.get("resume_token") or "made-by-the-fake-daemon-%s" % req["job"]
                        self.resume_tokens[req["job"]] = token
                        reply["resume_token"] = token
                    if self.accepts_measured:
                        reply["accepts_measured"] = True
                    if self.gpus is not None:
                        reply["gpus"] = list(self.gpus)
                    if self.emulated:
                        reply["emulated"] = True
                    deadline[0] = time.monotonic() + self.lease_ms / 1000.0
                    _send(c, reply)
                elif op == "begin":
                    deadline[0] = None  # waiting for a grant owes nothing
                    t0 = time.monotonic()
                    self._lane.acquire()
                    holding = True
                    with self._lock:
                        self.begins += 1
                        n = self.begins
                    if self.die_after_begins is not None and n > self.die_after_begins:
                        self.die()
                        break
                    deadline[0] = time.monotonic() + self.lease_ms / 1000.0
                    _send(c, {"id": rid, "ok": True, "lane": 0,
                              "wait_us": int((time.monotonic() - t0) * 1e6)})
                elif op == "end":
                    if not holding:
                        _send(c, {"id": rid, "ok": False, "code": "wrong_phase", "error": "end without begin"})
                        continue
                    holding = False
                    self._lane.release()
                    _send(c, {"id": rid, "ok": True})
                elif op == "measured" and self.accepts_measured:
                    _send(c, {"id": rid, "ok": True})
                elif op == "close":
                    finished = req.get("finished", True)
                    self._mark(job, "finished" if finished else "closed early")
                    deadline[0] = None
                    _send(c, {"id": rid, "ok": True})
                    break
                else:
                    _send(c, {"id": rid, "ok": False, "code": "bad_request", "error": "unknown op %r" % op})
        except OSError:
            pass
        finally:
            lost.set()
            if holding:
                self._lane.release()
            if job is not None:
                with self._lock:
                    if self.sessions.get(job) == "open":
                        self.sessions[job] = "lost: connection closed"
            _hard_close(c)

    def _mark(self, job, state):
        with self._lock:
            self.sessions[job] = state


def _send(c, msg):
    b = json.dumps(msg).encode()
    c.sendall(_HDR.pack(len(b)) + b)


def _recv(c):
    hdr = _read(c, 4)
    if hdr is None:
        return None
    body = _read(c, _HDR.unpack(hdr)[0])
    return None if body is None else json.loads(body.decode())


def _read(c, n):
    buf = b""
    while len(buf) < n:
        try:
            chunk = c.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return buf


def _hard_close(c):
    try:
        c.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    c.close()
