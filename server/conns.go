package server

import (
	"container/list"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/salusgo/salus/protocol"
)

// Connection slots, so that no user can take them all (docs/protocol.md,
// "Limits"):
//
//   - MaxConns bounds the fast path's connections, and separately the HTTP
//     API's;
//   - MaxConnsPerUser bounds one user's share of them: per uid over a Unix
//     socket (the kernel's SO_PEERCRED), per token over TCP (the token an open
//     presents; TCP connections that have not opened a session count as one more
//     user, since anyone may make them);
//   - a fast-path connection that has not opened its session holds its slot only
//     until someone needs it: when a limit is reached, the oldest such
//     connection of the same user (or, for the total, of anyone) is told
//     too_many_connections and closed, and the new one takes its place. So idle
//     connections, however many and however often reopened, cannot lock out a
//     session: only connections that carry sessions hold their slots;
//   - a daemon that can recover (RecoverWindow) keeps ReservedConns of the fast
//     path's slots for the sessions its clients resume after a restart: a new
//     session may not take them.
//
// A connection refused gets a frame that says why (an HTTP 503 on the HTTP API),
// never a bare reset (transport.go, refuse).

// Default shares of MaxConns (Config).
const (
	defaultPerUserShare  = 4 // MaxConnsPerUser: a quarter of MaxConns
	defaultReservedShare = 8 // ReservedConns: an eighth
)

func (c *Config) setConnLimits() {
	if c.MaxConnsPerUser == 0 {
		c.MaxConnsPerUser = -1
		if c.MaxConns > 0 {
			c.MaxConnsPerUser = max(c.MaxConns/defaultPerUserShare, 1)
		}
	}
	if c.ReservedConns == 0 {
		c.ReservedConns = -1
		if c.MaxConns > 0 {
			c.ReservedConns = c.MaxConns / defaultReservedShare
		}
	}
	if c.MaxConns > 0 && c.ReservedConns >= c.MaxConns {
		c.ReservedConns = c.MaxConns - 1 // a new session must be able to open
	}
}

// Account keys: whom a connection counts against.
const (
	acctTCP        = "tcp"         // a TCP connection before its open (or of a daemon without tokens)
	acctToken      = "token"       // TCP, opened with the daemon's token
	acctAdminToken = "admin-token" // TCP, opened with the admin token
	acctUnix       = "unix"        // a Unix-socket peer the kernel did not name
)

// accountOf is whom a new fast-path connection counts against.
func accountOf(unixConn bool, p *Peer) string {
	switch {
	case !unixConn:
		return acctTCP
	case p == nil:
		return acctUnix
	}
	return "uid " + strconv.FormatUint(uint64(p.UID), 10)
}

// accountWho names an account in a refusal.
func accountWho(key string) string {
	switch key {
	case acctTCP:
		return "TCP clients that have not opened a session"
	case acctToken:
		return "the TCP clients of the daemon's token"
	case acctAdminToken:
		return "the TCP clients of the admin token"
	case acctUnix:
		return "Unix-socket clients of unknown uid"
	}
	return key
}

// accounts are the fast path's connections by user and by state; guarded by
// s.tr.mu.
type accounts struct {
	open     int            // connections counted
	sessions int            // of which carry a session
	byUser   map[string]int // connections counted, by account
	pre      list.List      // the connections without a session, oldest first (*fastConn)
	preUser  map[string]*list.List
	refused  *prometheus.CounterVec // by reason
}

// connAcct is one fast-path connection's place in the accounts; guarded by
// s.tr.mu.
type connAcct struct {
	user          string
	counted       bool // in the accounts (false once it gave its slot away, or ended)
	session       bool
	pre, preOfUsr *list.Element
}

func (a *accounts) count(fc *fastConn) {
	if a.byUser == nil {
		a.byUser, a.preUser = map[string]int{}, map[string]*list.List{}
	}
	ac := &fc.acct
	ac.counted = true
	a.open++
	a.byUser[ac.user]++
	a.enqueue(fc)
}

// enqueue puts fc, without a session, at the back of the queues of those
// without one.
func (a *accounts) enqueue(fc *fastConn) {
	ac := &fc.acct
	ac.pre = a.pre.PushBack(fc)
	q := a.preUser[ac.user]
	if q == nil {
		q = list.New()
		a.preUser[ac.user] = q
	}
	ac.preOfUsr = q.PushBack(fc)
}

func (a *accounts) dequeue(fc *fastConn) {
	ac := &fc.acct
	if ac.pre == nil {
		return
	}
	a.pre.Remove(ac.pre)
	if q := a.preUser[ac.user]; q != nil {
		q.Remove(ac.preOfUsr)
		if q.Len() == 0 {
			delete(a.preUser, ac.user)
		}
	}
	ac.pre, ac.preOfUsr = nil, nil
}

func (a *accounts) uncount(fc *fastConn) {
	ac := &fc.acct
	if !ac.counted {
		return
	}
	ac.counted = false
	a.dequeue(fc)
	a.open--
	if a.byUser[ac.user]--; a.byUser[ac.user] <= 0 {
		delete(a.byUser, ac.user)
	}
	if ac.session {
		ac.session = false
		a.sessions--
	}
}

// oldestWithout is the oldest connection without a session, of user (any user
// when user is ""); nil when there is none.
func (a *accounts) oldestWithout(user string) *fastConn {
	q := &a.pre
	if user != "" {
		q = a.preUser[user]
	}
	if q == nil || q.Len() == 0 {
		return nil
	}
	return q.Front().Value.(*fastConn)
}

type admission int

const (
	connAdded admission = iota
	connShutdown
	connFull     // MaxConns
	connUserFull // MaxConnsPerUser
)

// addConn counts a new fast-path connection, or says why it may not have a
// slot. When a limit is reached and a connection without a session holds a slot
// it could have, that one is returned to give its slot up (yield), with the
// limit (connUserFull or connFull): the caller tells it once the lock is
// released.
func (s *Server) addConn(fc *fastConn) (r admission, yield *fastConn, limit admission) {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	if s.tr.done {
		return connShutdown, nil, 0
	}
	a := &s.tr.acct
	if per := s.cfg.MaxConnsPerUser; per > 0 && a.byUser[fc.acct.user] >= per {
		if yield, limit = a.oldestWithout(fc.acct.user), connUserFull; yield == nil {
			a.refuse("per_user")
			return connUserFull, nil, 0
		}
	}
	if yield == nil && s.cfg.MaxConns > 0 && a.open >= s.cfg.MaxConns {
		if yield, limit = a.oldestWithout(""), connFull; yield == nil {
			a.refuse("max_conns")
			return connFull, nil, 0
		}
	}
	if yield != nil {
		a.uncount(yield)
		a.refuse("yielded")
	}
	a.count(fc)
	if s.tr.conns == nil {
		s.tr.conns = map[*fastConn]struct{}{}
	}
	s.tr.conns[fc] = struct{}{}
	s.tr.wg.Add(1)
	return connAdded, yield, limit
}

func (s *Server) connDone(fc *fastConn) {
	s.tr.mu.Lock()
	s.tr.acct.uncount(fc)
	delete(s.tr.conns, fc)
	s.tr.mu.Unlock()
	s.tr.wg.Done()
}

func (a *accounts) refuse(reason string) {
	if a.refused != nil {
		a.refused.WithLabelValues(reason).Inc()
	}
}

// yieldSlot closes a connection without a session whose slot another
// connection took, telling it why.
func (fc *fastConn) yieldSlot(limit string) {
	why := "gave its slot to a newer connection before opening a session"
	fc.why.CompareAndSwap(nil, &why)
	fc.s.logLimited(slog.LevelInfo, "conn-yield", "fast path: connection without a session closed: a newer connection needed its slot",
		"limit", limit, "remote", fc.c.RemoteAddr().String())
	fc.fail(0, protocol.CodeTooManyConns, fmt.Sprintf(
		"connection closed before it opened a session: %s, and a newer connection took this one's slot: open the session as soon as you connect", limit))
	fc.closeConn()
}

// opening moves fc, whose open was allowed, among the connections that carry a
// session: over TCP it counts from now on against the token it presented (tok),
// and a new session (not resume) may not take the slots kept for resumed ones.
// An error refuses the open (too_many_connections); unopened undoes it when the
// open then fails.
func (s *Server) opening(fc *fastConn, resume bool, tok string) error {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	a, ac := &s.tr.acct, &fc.acct
	if !ac.counted {
		return errorf(protocol.CodeTooManyConns, "this connection gave its slot to a newer one before it opened a session: open the session as soon as you connect")
	}
	if ac.session {
		return nil
	}
	if user := tcpAccount(fc.unix, s.tokenLevelOf(tok)); user != "" && user != ac.user {
		if per := s.cfg.MaxConnsPerUser; per > 0 && a.byUser[user] >= per {
			a.refuse("per_user")
			return errorf(protocol.CodeTooManyConns, "%s: close connections you do not use, or ask the daemon's operator to raise the limit", s.userLimit(user))
		}
		a.dequeue(fc)
		if a.byUser[ac.user]--; a.byUser[ac.user] <= 0 {
			delete(a.byUser, ac.user)
		}
		ac.user = user
		a.byUser[user]++
	}
	if r := s.cfg.ReservedConns; !resume && r > 0 && s.cfg.RecoverWindow > 0 && s.cfg.MaxConns > 0 && a.sessions >= s.cfg.MaxConns-r {
		a.refuse("reserved")
		return errorf(protocol.CodeTooManyConns, "the daemon already carries %d sessions: its other %d connections (salus serve --reserved-conns) are kept for the sessions its clients resume after a restart: retry later", a.sessions, r)
	}
	a.dequeue(fc)
	ac.session = true
	a.sessions++
	return nil
}

// unopened puts fc back among the connections without a session: its open
// failed (a bad request, say) and it may try again.
func (s *Server) unopened(fc *fastConn) {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	a, ac := &s.tr.acct, &fc.acct
	if !ac.counted || !ac.session {
		return
	}
	ac.session = false
	a.sessions--
	a.enqueue(fc)
}

// tokenLevelOf is what tok grants; levelNone for an unknown one (its open was
// refused before).
func (s *Server) tokenLevelOf(tok string) level {
	lv, err := s.tokenLevel(tok)
	if err != nil {
		return levelNone
	}
	return lv
}

// tcpAccount is whom a TCP connection that opened with a token of level lv
// counts against; "" for a Unix-socket connection, which keeps its uid's.
func tcpAccount(unixConn bool, lv level) string {
	switch {
	case unixConn:
		return ""
	case lv == levelAdmin:
		return acctAdminToken
	case lv == levelUser:
		return acctToken
	}
	return acctTCP
}

// limitsFor is the sentence naming the limit a connection met.
func (s *Server) limitsFor(r admission, user string) string {
	if r == connUserFull {
		return s.userLimit(user)
	}
	return fmt.Sprintf("the daemon serves %d connections, its limit (salus serve --max-conns)", s.cfg.MaxConns)
}

func (s *Server) userLimit(user string) string {
	return fmt.Sprintf("%s: %d connections open, the most one user may hold (salus serve --max-conns-per-user)", accountWho(user), s.cfg.MaxConnsPerUser)
}

// The HTTP API's connection limit.

// LimitListener bounds the connections accepted on l to Config.MaxConns at once,
// and those of one uid, over a Unix socket, to Config.MaxConnsPerUser: beyond,
// a connection gets "503 Service Unavailable" and is closed. (Over TCP a call's
// token comes with each request, not with the connection: the total bounds
// them.) Accept errors are the caller's (http.Server.Serve backs off from
// temporary ones).
func (s *Server) LimitListener(l net.Listener) net.Listener {
	if s.cfg.MaxConns < 0 && s.cfg.MaxConnsPerUser < 0 {
		return l
	}
	return &limitListener{Listener: l, s: s, byUID: map[uint32]int{}}
}

type limitListener struct {
	net.Listener
	s    *Server
	open atomic.Int64

	mu    sync.Mutex
	byUID map[uint32]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cfg := &l.s.cfg
		if cfg.MaxConns < 0 || l.open.Add(1) <= int64(cfg.MaxConns) {
			cc := &countedConn{Conn: c, l: l, uid: -1}
			if p := peerOf(c); p != nil && cfg.MaxConnsPerUser > 0 {
				l.mu.Lock()
				full := l.byUID[p.UID] >= cfg.MaxConnsPerUser
				if !full {
					l.byUID[p.UID]++
					cc.uid = int64(p.UID)
				}
				l.mu.Unlock()
				if full {
					if cfg.MaxConns >= 0 {
						l.open.Add(-1)
					}
					l.refuse(c, "per_user", fmt.Sprintf("uid %d: %d HTTP connections open, the most one user may hold (salus serve --max-conns-per-user): close some, or retry later", p.UID, cfg.MaxConnsPerUser))
					continue
				}
			}
			return cc, nil
		}
		l.open.Add(-1)
		l.refuse(c, "max_conns", fmt.Sprintf("the daemon already serves %d HTTP connections, its limit (salus serve --max-conns): retry later, or raise the limit", cfg.MaxConns))
	}
}

func (l *limitListener) refuse(c net.Conn, reason, why string) {
	msg := protocol.CodeTooManyConns + ": " + why + "\n"
	l.s.logLimited(slog.LevelWarn, "http-conn-limit", "HTTP API: connection refused: too many connections",
		"limit", reason, "remote", c.RemoteAddr().String())
	l.s.tr.mu.Lock()
	l.s.tr.acct.refuse("http_" + reason)
	l.s.tr.mu.Unlock()
	l.s.refuse(c, fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg))
}

type countedConn struct {
	net.Conn
	l    *limitListener
	uid  int64 // counted against this uid; -1 none
	once sync.Once
}

// NetConn is the connection countedConn wraps, for the peer check (peer.go):
// through it the admin socket knows its callers' uids.
func (c *countedConn) NetConn() net.Conn { return c.Conn }

// CloseWrite keeps net/http's graceful close (it half-closes TCP connections).
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		if c.l.s.cfg.MaxConns >= 0 {
			c.l.open.Add(-1)
		}
		if c.uid >= 0 {
			c.l.mu.Lock()
			if c.l.byUID[uint32(c.uid)]--; c.l.byUID[uint32(c.uid)] <= 0 {
				delete(c.l.byUID, uint32(c.uid))
			}
			c.l.mu.Unlock()
		}
	})
	return c.Conn.Close()
}
