package protocol

// Error codes: an error reply's "code" (docs/protocol.md, Replies). The daemon's
// connect API uses the same codes (its unknown_session and permission_denied are
// its own).
const (
	// CodeBadFrame: an unreadable frame or body (length out of range, not a JSON object); the connection is closed.
	CodeBadFrame = "bad_frame"
	// CodeBadRequest: a missing or invalid field, unknown op, id < 1, unsupported version, a key in the wrong case, a string that is not UTF-8.
	CodeBadRequest = "bad_request"
	// CodeNotOpen: a request other than open before the session is open.
	CodeNotOpen = "not_open"
	// CodeAlreadyOpen: a second open on one connection.
	CodeAlreadyOpen = "already_open"
	// CodeBusy: a request was sent while another one was outstanding.
	CodeBusy = "busy"
	// CodeWrongPhase: end without a begin, or begin while an iteration runs.
	CodeWrongPhase = "wrong_phase"
	// CodeRejected: open refused (duplicate job, a job that cannot fit, unknown model, missing iter_s and demand).
	CodeRejected = "rejected"
	// CodeUnauthorized: open over TCP without the daemon's token, or with another; the connection is closed.
	CodeUnauthorized = "unauthorized"
	// CodeDraining: open refused because the daemon is draining; a job waiting for admission gets it too.
	CodeDraining = "draining"
	// CodeEvicted: an operator or the idle timeout ended the session; the client should exit.
	CodeEvicted = "evicted"
	// CodeLost: the session was lost (lease expired), or an open with resume found nothing to take back.
	CodeLost = "lost"
	// CodeShutdown: the daemon is shutting down; the connection is closed.
	CodeShutdown = "shutdown"
	// CodeRestarting: the daemon stops for a restart and keeps the session in its
	// journal; the connection is closed, and the client reconnects and resumes
	// the session within its recover window (recover_ms), as after a crash.
	CodeRestarting = "restarting"
	// CodeTooManyConns: the daemon already serves its --max-conns connections; the connection is closed.
	CodeTooManyConns = "too_many_connections"
	// CodeTimeout: no session opened within the handshake timeout, or a frame incomplete after the read timeout; closed.
	CodeTimeout = "timeout"
	// CodeJournal: the daemon cannot write its journal (a full disk): it admits no new job until it can; retry later.
	CodeJournal = "journal_unavailable"
	// CodeUnknown: the connect API's call names no live session.
	CodeUnknown = "unknown_session"
	// CodePermissionDenied: the connect API's call lacks the session's secret or the admin's rights.
	CodePermissionDenied = "permission_denied"
	// CodeResumeDenied: an open with resume without the session's resume token, with another, or from another uid than its opener's; the connection is closed and the session untouched.
	CodeResumeDenied = "resume_denied"
	// CodeClaimDenied: an open naming a Kubernetes claim without the claim's secret, or with another; the connection is closed and the claim untouched.
	CodeClaimDenied = "claim_denied"
)

// CodeInfo describes one error code.
type CodeInfo struct {
	Code    string
	Meaning string
	// FastPath: the fast path answers with it (else only the connect API does).
	FastPath bool
	// Ends: the session is over, or was never opened and the connection is
	// closed: a client stops (or reconnects), it does not retry the request.
	Ends bool
}

// Codes lists every error code, in the order of docs/protocol.md's table.
var Codes = []CodeInfo{
	{CodeBadFrame, "unreadable frame or body (length out of range, not a JSON object)", true, true},
	{CodeBadRequest, "missing or invalid field, unknown op, id < 1, unsupported version, a key in the wrong case, a string that is not valid UTF-8", true, false},
	{CodeNotOpen, "a request other than open before the session is open", true, false},
	{CodeAlreadyOpen, "a second open on this connection", true, false},
	{CodeBusy, "a request was sent while another one was outstanding", true, false},
	{CodeWrongPhase, "end without a begin, begin while an iteration runs", true, false},
	{CodeRejected, "open refused: duplicate job name, a job that cannot fit the device, unknown model, an emulating daemon not told iter_s and demand", true, false},
	{CodeUnauthorized, "open over TCP without the daemon's token, or with another", true, true},
	{CodeDraining, "open refused: the daemon is draining; a job that was waiting for admission gets it too", true, true},
	{CodeEvicted, "an operator evicted the session, or the idle timeout did; the client should exit", true, true},
	{CodeLost, "the session was lost (lease expired); also an open with resume when there is no session to take back", true, true},
	{CodeShutdown, "the daemon is shutting down", true, true},
	{CodeRestarting, "the daemon stops for a restart (SIGTERM with a journal) and keeps the session; reconnect and resume it within recover_ms", true, false},
	{CodeTooManyConns, "the daemon serves --max-conns connections already", true, true},
	{CodeTimeout, "no session opened within --handshake-timeout, or a frame incomplete --read-timeout after its first byte", true, true},
	{CodeJournal, "open (or measured) refused: the daemon cannot write its journal (a full disk, say) and admits no new job until it can; retry later", true, false},
	{CodeUnknown, "connect API: no live session of that name", false, false},
	{CodePermissionDenied, "connect API: the caller lacks the session's secret or the admin's rights", false, false},
	{CodeResumeDenied, "open with resume without the session's resume_token, with another, or from another uid than its opener's", true, true},
	{CodeClaimDenied, "open naming a claim without its claim_secret (the DRA driver's SALUS_CLAIM_SECRET), or with another", true, true},
}

// Ends reports whether an error reply with code means the session is over (see
// CodeInfo.Ends); false for codes it does not know.
func Ends(code string) bool {
	for _, c := range Codes {
		if c.Code == code {
			return c.Ends
		}
	}
	return false
}
