"""Constants of the salus fast-path protocol (docs/protocol.md).

Generated from the Go package github.com/salusgo/salus/protocol by its tests: do not
edit. Regenerate with ``go test ./protocol -run TestPythonCodes -update``; the Go
tests fail while this file is stale.
"""

VERSION = 1
MIN_FRAME = 2
MAX_FRAME = 65536

# Error codes: an error reply's "code".
BAD_FRAME = "bad_frame"
BAD_REQUEST = "bad_request"
NOT_OPEN = "not_open"
ALREADY_OPEN = "already_open"
BUSY = "busy"
WRONG_PHASE = "wrong_phase"
REJECTED = "rejected"
UNAUTHORIZED = "unauthorized"
DRAINING = "draining"
EVICTED = "evicted"
LOST = "lost"
SHUTDOWN = "shutdown"
RESTARTING = "restarting"
TOO_MANY_CONNECTIONS = "too_many_connections"
TIMEOUT = "timeout"
JOURNAL_UNAVAILABLE = "journal_unavailable"
UNKNOWN_SESSION = "unknown_session"
PERMISSION_DENIED = "permission_denied"
RESUME_DENIED = "resume_denied"
CLAIM_DENIED = "claim_denied"

# What each code means.
CODES = {
    BAD_FRAME: "unreadable frame or body (length out of range, not a JSON object)",
    BAD_REQUEST: "missing or invalid field, unknown op, id < 1, unsupported version, a key in the wrong case, a string that is not valid UTF-8",
    NOT_OPEN: "a request other than open before the session is open",
    ALREADY_OPEN: "a second open on this connection",
    BUSY: "a request was sent while another one was outstanding",
    WRONG_PHASE: "end without a begin, begin while an iteration runs",
    REJECTED: "open refused: duplicate job name, a job that cannot fit the device, unknown model, an emulating daemon not told iter_s and demand",
    UNAUTHORIZED: "open over TCP without the daemon's token, or with another",
    DRAINING: "open refused: the daemon is draining; a job that was waiting for admission gets it too",
    EVICTED: "an operator evicted the session, or the idle timeout did; the client should exit",
    LOST: "the session was lost (lease expired); also an open with resume when there is no session to take back",
    SHUTDOWN: "the daemon is shutting down",
    RESTARTING: "the daemon stops for a restart (SIGTERM with a journal) and keeps the session; reconnect and resume it within recover_ms",
    TOO_MANY_CONNECTIONS: "the daemon serves --max-conns connections already",
    TIMEOUT: "no session opened within --handshake-timeout, or a frame incomplete --read-timeout after its first byte",
    JOURNAL_UNAVAILABLE: "open (or measured) refused: the daemon cannot write its journal (a full disk, say) and admits no new job until it can; retry later",
    UNKNOWN_SESSION: "connect API: no live session of that name",
    PERMISSION_DENIED: "connect API: the caller lacks the session's secret or the admin's rights",
    RESUME_DENIED: "open with resume without the session's resume_token, with another, or from another uid than its opener's",
    CLAIM_DENIED: "open naming a claim without its claim_secret (the DRA driver's SALUS_CLAIM_SECRET), or with another",
}

# Codes that end the session: the client stops (or reconnects), it does not retry.
ENDS_SESSION = frozenset([
    BAD_FRAME,
    UNAUTHORIZED,
    DRAINING,
    EVICTED,
    LOST,
    SHUTDOWN,
    TOO_MANY_CONNECTIONS,
    TIMEOUT,
    RESUME_DENIED,
    CLAIM_DENIED,
])
