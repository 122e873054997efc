package server

// Access control. Who may do what is decided by the operating system where it can
// be, as containerd and Docker do with their sockets:
//
//   - over a Unix socket (the fast path's, or the connect API's when served on
//     one), the socket file's mode and group decide who connects; the daemon reads
//     the peer's uid, gid and pid from the kernel (SO_PEERCRED) and logs them;
//   - over TCP, anyone on the machine can connect, so a caller presents the
//     daemon's token (Config.Token): in the fast path's open, or as
//     "Authorization: Bearer" on the connect API;
//   - a session is controlled only by what opened it: the connection on the fast
//     path, the per-session secret OpenSession returns on the connect API;
//   - the admin calls (ListSessions, EvictSession, Drain) need the admin token or,
//     over a Unix socket, the daemon's own uid or root.
//   - a session recovered after a restart is given back only to its opener: an
//     open with resume must present the resume token that the session's first
//     open reply gave (the journal keeps only its SHA-256), and, when the opener
//     came over a Unix socket and the resume does too, come from the same uid;
//     anything else is refused with code resume_denied, and the session waits on
//     for its owner. A resumed connect session gets a fresh secret, and keeps the
//     resumer's process as its owner;
//   - a Kubernetes claim is used only by the pod it was prepared for: an open
//     naming it must present its secret (claims.go), else code claim_denied.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/protocol"
)

// NewToken returns a fresh random token (256 bits, hex), for the token files and
// the connect API's session secrets.
func NewToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return hex.EncodeToString(b[:])
}

func newSecret() string { return NewToken() }

func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// hashSecret is what the daemon keeps of a resume token or a claim secret: its
// SHA-256, hex. The journal records only this.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// matches reports whether secret is the one whose hash is hash; never for an
// empty secret or hash.
func matches(secret, hash string) bool {
	return secret != "" && hash != "" && same(hashSecret(secret), hash)
}

// uidOf is p's uid for the journal (decimal); "" when the kernel did not say
// (a TCP client).
func uidOf(p *Peer) string {
	if p == nil {
		return ""
	}
	return strconv.FormatUint(uint64(p.UID), 10)
}

// parseUID reads back what uidOf wrote; nil for "" or anything else.
func parseUID(s string) *uint32 {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return nil
	}
	uid := uint32(n)
	return &uid
}

// Secrets that clients choose (a resume token, a claim's secret) are 32 to 256
// printable ASCII characters (a random one: 64 hex digits): enough not to be
// guessed, and safe in an environment variable.
const minSecret, maxSecret = 32, 256

// checkSecret refuses a secret that is short, long, or not printable ASCII;
// "" passes. what names it in the message ("open \"x\": field resume_token").
func checkSecret(what, secret string) error {
	if secret == "" {
		return nil
	}
	if len(secret) < minSecret || len(secret) > maxSecret {
		return errorf(protocol.CodeBadRequest, "%s has %d characters: give %d to %d printable ASCII characters (a random one: 64 hex digits), or none and the daemon makes one", what, len(secret), minSecret, maxSecret)
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= ' ' || c > '~' {
			return errorf(protocol.CodeBadRequest, "%s has a character that is not printable ASCII (byte %d): give %d to %d printable ASCII characters, or none and the daemon makes one", what, i, minSecret, maxSecret)
		}
	}
	return nil
}

// resumeToken is the resume token of a fresh open: the client's, checked, or
// a new one.
func resumeToken(req OpenRequest) (string, error) {
	if req.ResumeToken == "" {
		return newSecret(), nil
	}
	if err := checkSecret(fmt.Sprintf("open %q: field resume_token", req.Job), req.ResumeToken); err != nil {
		return "", err
	}
	return req.ResumeToken, nil
}

// mayResume checks that req may take back the recovered session old: it
// presents old's resume token, comes from its opener's uid when both came over
// a Unix socket, and, naming a claim, has the claim's secret. A refused resume
// changes nothing: the session waits for its owner. Under s.mu.
func (s *Server) mayResume(old *Session, req OpenRequest) error {
	var err error
	switch {
	case old.resumeHash == "":
		err = errorf(protocol.CodeResumeDenied, "open %q with resume: the daemon's journal holds no resume token for this session (a daemon before resume tokens opened it), so it cannot tell its owner: it is not given back; it is logged lost once the recover window (%v) passes, then open the job anew, without resume", req.Job, s.cfg.RecoverWindow)
	case req.ResumeToken == "":
		err = errorf(protocol.CodeResumeDenied, "open %q with resume: present the session's resume token in the field resume_token (its first open reply gave it; the Go and Python clients keep it and send it when they reconnect): only the session's opener may take it back", req.Job)
	case !matches(req.ResumeToken, old.resumeHash):
		err = errorf(protocol.CodeResumeDenied, "open %q with resume: the resume token presented is not this session's: only the session's opener may take it back", req.Job)
	case old.ownerUID != nil && req.Peer != nil && req.Peer.UID != *old.ownerUID:
		err = errorf(protocol.CodeResumeDenied, "open %q with resume: the session was opened by uid %d, and this resume comes from uid %d: resume it as the user that opened it", req.Job, *old.ownerUID, req.Peer.UID)
	default:
		err = s.claimForResume(req) // claims.go
	}
	return err
}

// logDenied logs an open refused for want of a resume token or claim secret,
// rate-limited; called without s.mu.
func (s *Server) logDenied(req OpenRequest, err error) {
	code := CodeOf(err)
	if code != protocol.CodeResumeDenied && code != protocol.CodeClaimDenied {
		return
	}
	s.logLimited(slog.LevelWarn, code, "open refused: "+code, append([]any{"job", req.Job, "claim", req.Claim, "resume", req.Resume,
		"reason", err.Error()}, req.Peer.logAttrs()...)...)
}

// level is what a caller may do.
type level int

const (
	levelNone  level = iota
	levelUser        // open and drive its own sessions, read the daemon's state
	levelAdmin       // and list sessions, evict, drain
)

// tokenLevel is what a presented token grants; an unknown one is an error.
func (s *Server) tokenLevel(tok string) (level, error) {
	switch {
	case tok == "":
		return levelNone, nil
	case s.cfg.AdminToken != "" && same(tok, s.cfg.AdminToken):
		return levelAdmin, nil
	case s.cfg.Token != "" && same(tok, s.cfg.Token):
		return levelUser, nil
	}
	return levelNone, errorf(protocol.CodeUnauthorized, "the token presented is not this daemon's: %s", s.tokenWhere())
}

// tokenWhere says where a refused caller finds the token.
func (s *Server) tokenWhere() string {
	where := "the daemon's token file (salus serve --token-file)"
	if s.cfg.TokenFile != "" {
		where = "the daemon's token file " + s.cfg.TokenFile
	}
	return where + ", readable by the daemon's user only: ask them for it and give it to the client " +
		"($SALUS_TOKEN, or the file named by $SALUS_TOKEN_FILE), or connect over the daemon's Unix socket, where no token is needed"
}

// fastOpenAllowed checks a fast-path open's token: a TCP connection needs the
// daemon's token (or the admin token); a Unix-socket connection needs none.
func (s *Server) fastOpenAllowed(unixConn bool, tok string) error {
	if unixConn || s.cfg.Token == "" && s.cfg.AdminToken == "" {
		return nil
	}
	if tok == "" {
		return errorf(protocol.CodeUnauthorized, "open over TCP needs the daemon's token in the field \"token\": it is in %s", s.tokenWhere())
	}
	_, err := s.tokenLevel(tok)
	return err
}

// connInfo is what the HTTP server knows of a connection.
type connInfo struct {
	unix bool
	peer *Peer
}

type connKey struct{}

// connContext records, for each HTTP connection, whether it came over a Unix socket
// and from which process (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if !isUnix(c) {
		return ctx
	}
	return context.WithValue(ctx, connKey{}, &connInfo{unix: true, peer: peerOf(c)})
}

// caller is who made a connect API call, as authenticate found it.
type caller struct {
	level level
	who   string // for logs and eviction reasons
	peer  *Peer  // over a Unix socket
}

type callerKey struct{}

func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// adminOnly are the connect procedures that need an admin.
var adminOnly = map[string]bool{
	salusv1connect.AdminServiceListSessionsProcedure: true,
	salusv1connect.AdminServiceEvictSessionProcedure: true,
	salusv1connect.AdminServiceDrainProcedure:        true,
	salusv1connect.AdminServiceReserveClaimProcedure: true,
	salusv1connect.AdminServiceReleaseClaimProcedure: true,
	salusv1connect.AdminServiceListClaimsProcedure:   true,
}

// authenticate finds what the caller of procedure may do: the better of what its
// bearer token grants and what its Unix-socket connection grants.
func (s *Server) authenticate(ctx context.Context, header string, procedure string) (caller, error) {
	tok, hasBearer := strings.CutPrefix(header, "Bearer ")
	if header != "" && !hasBearer {
		return caller{}, errorf(protocol.CodeUnauthorized, "the Authorization header must be \"Bearer TOKEN\"; the token is in %s", s.tokenWhere())
	}
	tok = strings.TrimSpace(tok)
	c := caller{}
	ci, _ := ctx.Value(connKey{}).(*connInfo)
	lv, err := s.tokenLevel(tok)
	if err != nil {
		// A caller the Unix socket names by its uid is who the kernel says, whatever
		// stale token file its client found: the peer decides, below.
		if ci == nil || !ci.unix || ci.peer == nil {
			return caller{}, err
		}
		lv = levelNone
	}
	switch lv {
	case levelAdmin:
		c = caller{level: levelAdmin, who: "the admin token's holder"}
	case levelUser:
		c = caller{level: levelUser, who: "a token holder"}
	}
	if ci != nil && ci.unix {
		c.peer = ci.peer
		local := caller{level: levelUser, who: ci.peer.String(), peer: ci.peer}
		if p := ci.peer; p != nil && (p.UID == 0 || p.UID == uint32(os.Getuid())) {
			local.level = levelAdmin
		}
		if local.level > c.level {
			c = local
		}
	}
	if c.level == levelNone {
		if s.cfg.Token != "" || s.cfg.AdminToken != "" {
			return caller{}, errorf(protocol.CodeUnauthorized, "the connect API needs the daemon's token: send \"Authorization: Bearer TOKEN\"; the token is in %s", s.tokenWhere())
		}
		c = caller{level: levelUser, who: "a caller (the daemon has no token)"}
	}
	if adminOnly[procedure] && c.level < levelAdmin {
		return caller{}, errorf(protocol.CodePermissionDenied, "%s is an admin call: present the admin token (salus serve --admin-token-file) as \"Authorization: Bearer TOKEN\", or call over the API's Unix socket as the daemon's user or root", procedure)
	}
	return c, nil
}

// authInterceptor authenticates every connect call and hands the caller to the
// handler in its context.
func (s *Server) authInterceptor() connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			c, err := s.authenticate(ctx, req.Header().Get("Authorization"), req.Spec().Procedure)
			if err != nil {
				return nil, connectErr(err)
			}
			return next(context.WithValue(ctx, callerKey{}, c), req)
		}
	})
}

// owner says who opened ss, for ListSessions: its process when it came over a
// Unix socket, else the uid the journal recorded for a recovered session.
func owner(ss *Session) string {
	switch {
	case ss.peer != nil:
		return ss.peer.String()
	case ss.ownerUID != nil:
		return "uid " + strconv.FormatUint(uint64(*ss.ownerUID), 10) + " (from the journal)"
	}
	return ""
}

// owned checks that secret is the one the session's opener was given.
func owned(ss *Session, secret string) error {
	if !same(secret, ss.secret) {
		return errorf(protocol.CodePermissionDenied, "session %q belongs to the caller that opened it: present the secret its OpenSession returned (field secret); an operator can evict it (salus evict)", ss.id)
	}
	return nil
}
