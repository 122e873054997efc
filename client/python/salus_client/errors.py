"""Exceptions raised by the salus client.

Every exception the client raises on purpose is a :class:`SalusError`, so a training
loop can write ``except salus_client.SalusError`` and decide what to do (stop, or go on
without the daemon). The subclasses say what happened:

- :class:`DaemonUnavailable`: there is no daemon at the address (nothing listens, the
  socket file is missing, the host refuses);
- :class:`DaemonGone`: the daemon was there and went away: the connection closed or
  was reset, or the daemon said it is shutting down;
- :class:`SessionLost`: the daemon dropped this session (its lease expired);
- :class:`Evicted`: an operator (``salus evict``) or the idle timeout ended this session;
- :class:`Rejected`: the daemon refused to open the session (duplicate name, a job that
  cannot fit the device, an unknown model, a draining daemon: code ``draining``);
- :class:`Unauthorized`: the open over TCP lacked the daemon's token, or had another;
- :class:`PermissionDenied`: the open named a session or a claim that is not this job's: a
  resume without the session's resume token (code ``resume_denied``), or a claim without its
  secret (code ``claim_denied``);
- :class:`ProtocolError`: any other error reply, or a reply the client cannot read.
"""


class SalusError(Exception):
    """Base class of every error the salus client raises.

    ``code`` is the daemon's error code (``"rejected"``, ``"lost"``, ...) when the error
    came from a reply, else a short code chosen by the client.
    """

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class DaemonUnavailable(SalusError, ConnectionError):
    """No salus daemon could be reached at the address."""


class DaemonGone(SalusError, ConnectionError):
    """The daemon went away (connection closed or reset, or it shut down)."""


class SessionLost(DaemonGone):
    """The daemon dropped this session (lease expired); the job should stop or reconnect."""


class Evicted(SessionLost):
    """An operator evicted this session (``salus evict``), or the daemon's idle timeout did."""


class Rejected(SalusError):
    """The daemon refused to open the session."""


class Unauthorized(Rejected):
    """The open over TCP did not carry the daemon's token (``token=``, ``$SALUS_TOKEN``)."""


class PermissionDenied(Rejected):
    """The open named what is not this job's: a recovered session without its resume token
    (code ``resume_denied``), or a Kubernetes claim without its secret (``claim_denied``,
    ``$SALUS_CLAIM_SECRET``)."""


class ProtocolError(SalusError):
    """The daemon answered with an error, or with something the client cannot read."""
