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

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"os"
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
	lv, err := s.tokenLevel(tok)
	if err != nil {
		return caller{}, err
	}
	switch lv {
	case levelAdmin:
		c = caller{level: levelAdmin, who: "the admin token's holder"}
	case levelUser:
		c = caller{level: levelUser, who: "a token holder"}
	}
	if ci, _ := ctx.Value(connKey{}).(*connInfo); ci != nil && ci.unix {
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

// owned checks that secret is the one the session's opener was given.
func owned(ss *Session, secret string) error {
	if !same(secret, ss.secret) {
		return errorf(protocol.CodePermissionDenied, "session %q belongs to the caller that opened it: present the secret its OpenSession returned (field secret); an operator can evict it (salus evict)", ss.id)
	}
	return nil
}
