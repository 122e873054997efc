"""The salus fast-path framed protocol, version 1 (see docs/protocol.md).

One connection carries one session. Every message is a frame: a 4-byte big-endian
length, then that many bytes of UTF-8 JSON (one object). Requests carry an ``op`` and
an ``id``; replies echo the ``id`` and say ``ok``. This module only moves frames; it
knows nothing of sessions, GPUs or signals.
"""

import json
import os
import socket
import stat
import struct
import threading

from . import codes
from .codes import MAX_FRAME, MIN_FRAME, VERSION
from .errors import DaemonGone, DaemonUnavailable, ProtocolError, SalusError, SessionLost

__all__ = ["VERSION", "MIN_FRAME", "MAX_FRAME", "DEFAULT_SOCKET", "SYSTEM_SOCKET", "Connection",
           "default_socket", "resolve_address", "resolve_token", "describe"]

SYSTEM_SOCKET = "/run/salus/salus.sock"
_HEADER = struct.Struct(">I")
_CRED = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid


def default_socket():
    """Return the user's default socket, as ``salus serve`` makes it (``--socket auto``).

    A path in a directory only the user can write, so that no other user can take its
    name: ``/run/salus/salus.sock`` for root, else ``$XDG_RUNTIME_DIR/salus/salus.sock``,
    else ``$TMPDIR/salus-UID/salus.sock`` (``/tmp`` without ``$TMPDIR``).
    """
    uid = os.getuid()
    if uid == 0:
        return SYSTEM_SOCKET
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "salus", "salus.sock")
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", "salus-%d" % uid, "salus.sock")


DEFAULT_SOCKET = default_socket()


def _default_path():
    """The socket the default address names now: the user's own when a socket is
    there, else the system's (a daemon run by root) when one is there, else the
    user's."""
    own = default_socket()
    for path in (own, SYSTEM_SOCKET):
        try:
            if stat.S_ISSOCK(os.stat(path).st_mode):
                return path
        except OSError:
            pass
    return own


def names_default(address=None):
    """Whether ``address`` (as :func:`resolve_address` takes it) is the default socket."""
    if address is None:
        address = os.environ.get("SALUS_ADDR") or "auto"
    return str(address).strip() in ("", "auto")


def resolve_address(address=None):
    """Return ``("unix", path)`` or ``("tcp", (host, port))`` for an address.

    ``address`` may be ``None`` (then ``$SALUS_ADDR``, then the default Unix socket,
    see :func:`default_socket`; ``/run/salus/salus.sock`` of a daemon run by root when
    the user's own has no socket), ``"auto"`` (the default socket), ``"unix:PATH"``, a
    path (anything with a ``/``), ``"tcp://HOST:PORT"`` or ``"HOST:PORT"``.
    """
    if names_default(address):
        return "unix", _default_path()
    if address is None:
        address = os.environ["SALUS_ADDR"]
    address = str(address).strip()
    if address.startswith("unix:"):
        path = address[len("unix:"):]
        return "unix", path[2:] if path.startswith("//") else path
    if address.startswith("tcp://"):
        address = address[len("tcp://"):]
    elif "/" in address:
        return "unix", address
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(
            "salus address %r is neither a socket path nor HOST:PORT; "
            "use e.g. ./salus.sock, unix:/run/salus/salus.sock or 127.0.0.1:7071" % address)
    return "tcp", (host.strip("[]") or "127.0.0.1", int(port))


def resolve_token(token=None, token_file=None):
    """Return the daemon's token to send at open, or ``None``.

    ``token`` itself, else the contents of ``token_file``, else ``$SALUS_TOKEN``, else
    the contents of the file ``$SALUS_TOKEN_FILE`` names. Only an open over TCP needs
    one; over the Unix socket the daemon ignores it.
    """
    if token:
        return str(token).strip()
    source = "token_file="
    if not token_file:
        env = os.environ.get("SALUS_TOKEN")
        if env:
            return env.strip()
        token_file, source = os.environ.get("SALUS_TOKEN_FILE"), "$SALUS_TOKEN_FILE"
    if not token_file:
        return None
    try:
        with open(token_file) as f:
            return f.read().strip()
    except OSError as e:
        raise SalusError("cannot read the salus daemon's token from %s (%s): %s"
                         % (token_file, source, e), code="token") from None


def _peer_uid(sock):
    """The uid of the process serving a Unix socket (SO_PEERCRED), or None."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    try:
        return _CRED.unpack(sock.getsockopt(socket.SOL_SOCKET, opt, _CRED.size))[1]
    except OSError:
        return None


def describe(addr):
    """Return a human-readable form of a resolved address."""
    kind, where = addr
    return where if kind == "unix" else "%s:%d" % where


class Connection:
    """A framed connection to the daemon.

    ``request`` sends one request and waits for its reply (one at a time);
    ``send_nowait`` sends a frame without waiting (heartbeats), and may be called from
    another thread: every frame write holds one lock, so frames never interleave.
    """

    def __init__(self, address=None, connect_timeout=5.0, expect_uid=None):
        """Connect. Over a Unix socket the serving process's uid (``peer_uid``, Linux)
        must be ``expect_uid`` when given (a reconnection: the uid that served the
        session), and for the default socket the user's own or root's: a socket
        another user took is closed before anything is sent to it."""
        self.addr = resolve_address(address)
        self.where = describe(self.addr)
        kind, where = self.addr
        family = socket.AF_UNIX if kind == "unix" else socket.AF_INET
        if kind == "tcp" and ":" in where[0]:
            family = socket.AF_INET6
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(connect_timeout)
        try:
            sock.connect(where)
        except (FileNotFoundError, ConnectionRefusedError) as e:
            sock.close()
            raise DaemonUnavailable(
                "no salus daemon at %s (%s); start one with `salus serve`, or point "
                "SALUS_ADDR (or address=) at a running daemon" % (self.where, e.strerror or e),
                code="unavailable") from None
        except OSError as e:
            sock.close()
            raise DaemonUnavailable(
                "cannot reach the salus daemon at %s: %s" % (self.where, e),
                code="unavailable") from None
        self.peer_uid = _peer_uid(sock) if kind == "unix" else None
        uid = self.peer_uid
        if uid is not None and ((expect_uid is not None and uid != expect_uid)
                                or (expect_uid is None and names_default(address) and uid not in (0, os.getuid()))):
            sock.close()
            want = "uid %d, which served this session" % expect_uid if expect_uid is not None else \
                "yours (%d) nor root" % os.getuid()
            raise DaemonUnavailable(
                "the salus socket %s is served by uid %d, not %s: another user may have taken its "
                "name; nothing was sent to it (point SALUS_ADDR at the daemon, or stop that process)"
                % (self.where, uid, want), code="untrusted")
        sock.settimeout(None)
        if kind == "tcp":
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self._wlock = threading.Lock()
        self._next_id = 1
        self.closed = False

    # -- frames -------------------------------------------------------------

    def _write(self, msg):
        body = json.dumps(msg, separators=(",", ":")).encode()
        frame = _HEADER.pack(len(body)) + body
        with self._wlock:
            if self.closed:
                raise DaemonGone("the connection to the salus daemon at %s is closed" % self.where,
                                 code="closed")
            try:
                self.sock.sendall(frame)
                return
            except OSError as e:
                failure = e
        # The daemon may have said why before closing (lease expired, shutting down).
        reply = self._last_words()
        if reply is not None and reply.get("ok") is not True:
            self.raise_for(msg.get("op", "request"), reply)
        self.close()
        raise DaemonGone("the salus daemon at %s went away (%s)" % (self.where, failure),
                         code="gone")

    def _last_words(self):
        """After a failed write: a frame the daemon left before closing, if any."""
        try:
            self.sock.settimeout(0.05)
            return self.read_frame()
        except (SalusError, OSError, ValueError):
            return None

    def _read_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except OSError as e:
                raise DaemonGone("the salus daemon at %s went away (%s)" % (self.where, e),
                                 code="gone") from None
            if not chunk:
                raise DaemonGone("the salus daemon at %s closed the connection" % self.where,
                                 code="gone")
            buf += chunk
        return bytes(buf)

    def read_frame(self):
        """Read one frame and return its JSON object."""
        (n,) = _HEADER.unpack(self._read_exact(_HEADER.size))
        if n < MIN_FRAME or n > MAX_FRAME:
            raise ProtocolError("the daemon sent a frame of %d bytes (allowed %d..%d)" % (n, MIN_FRAME, MAX_FRAME),
                                code=codes.BAD_FRAME)
        body = self._read_exact(n)
        try:
            msg = json.loads(body.decode())
        except ValueError as e:
            raise ProtocolError("the daemon sent a body that is not JSON: %s" % e, code=codes.BAD_FRAME) from None
        if not isinstance(msg, dict):
            raise ProtocolError("the daemon sent a body that is not a JSON object", code=codes.BAD_FRAME)
        return msg

    # -- requests -----------------------------------------------------------

    def send_nowait(self, msg):
        """Send one frame and do not wait for a reply (used for heartbeats)."""
        self._write(msg)

    def request(self, op, **fields):
        """Send one request and return its reply (a dict with ``ok`` true).

        An error reply raises: :class:`SessionLost` for code ``lost``,
        :class:`DaemonGone` for ``shutdown``, ``exc_for(code)`` from the caller's
        mapping otherwise (see :meth:`raise_for`).
        """
        rid = self._next_id
        self._next_id += 1
        msg = {"op": op, "id": rid}
        msg.update({k: v for k, v in fields.items() if v is not None})
        self._write(msg)
        while True:
            reply = self.read_frame()
            if reply.get("ok") is True and reply.get("id") == rid:
                return reply
            if reply.get("ok") is not True:
                # An error for this request, or an unsolicited one (id 0: shutdown, bad_frame).
                self.raise_for(op, reply)
            # A stray success reply for another id: the protocol has no such thing.
            raise ProtocolError("the daemon answered request %d with a reply for id %r"
                                % (rid, reply.get("id")), code="bad_reply")

    def raise_for(self, op, reply):
        """Raise the exception that an error reply to ``op`` stands for."""
        from .errors import Evicted, PermissionDenied, Rejected, Unauthorized
        code = reply.get("code") or "error"
        text = reply.get("error") or "no message"
        msg = "salus daemon at %s refused %s: %s (code %s)" % (self.where, op, text, code)
        if code == codes.EVICTED:
            self.close()
            raise Evicted(msg, code=code)
        if code == codes.LOST:
            self.close()
            raise SessionLost(msg, code=code)
        if code == codes.UNAUTHORIZED:
            self.close()
            raise Unauthorized(msg, code=code)
        if code in (codes.RESUME_DENIED, codes.CLAIM_DENIED):
            self.close()
            raise PermissionDenied(msg, code=code)
        if code == codes.SHUTDOWN:
            self.close()
            raise DaemonGone("the salus daemon at %s is shutting down: %s" % (self.where, text), code=code)
        if code == codes.RESTARTING:
            # The daemon restarts and keeps the session: as after a crash, the session
            # reconnects and resumes (code "gone" is what the reconnect looks for).
            self.close()
            raise DaemonGone("the salus daemon at %s is restarting: %s" % (self.where, text), code="gone")
        if code == codes.BAD_FRAME:
            self.close()
        if code in (codes.REJECTED, codes.DRAINING):
            raise Rejected(msg, code=code)
        raise ProtocolError(msg, code=code)

    def close(self):
        """Close the socket (idempotent). The daemon then ends the session, if any.

        Takes no lock, so a signal handler may call it while a frame is being written.
        """
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
