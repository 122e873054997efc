package server

import (
	"fmt"
	"net"
	"sync"
)

// Peer is the process at the other end of a Unix-socket connection, as the kernel
// reports it when the connection is made (SO_PEERCRED): who opened a session, for
// the log, ListSessions, the admin check and the per-user connection limit
// (conns.go). It cannot be forged by the client.
type Peer struct {
	UID, GID uint32
	PID      int32
}

func (p *Peer) String() string {
	if p == nil {
		return "unknown process"
	}
	return fmt.Sprintf("uid %d (gid %d, pid %d)", p.UID, p.GID, p.PID)
}

// logAttrs are the slog attributes of p; none when p is nil (a TCP client).
func (p *Peer) logAttrs() []any {
	if p == nil {
		return nil
	}
	return []any{"uid", p.UID, "gid", p.GID, "pid", p.PID}
}

// wrapper is a connection that wraps another, as the HTTP API's connection limit
// does (countedConn; tls.Conn has the same method): NetConn returns the one it
// wraps.
type wrapper interface{ NetConn() net.Conn }

// unwrap returns the connection under every wrapper of c: the kernel's socket,
// whose type says its transport and whose credentials say its peer. A wrapper
// must never hide them (the admin socket, behind the connection limit, once did
// not recognise its own uid).
func unwrap(c net.Conn) net.Conn {
	for range 16 { // wrappers do not nest deeper; a cycle must not hang accept
		w, ok := c.(wrapper)
		if !ok {
			break
		}
		c = w.NetConn()
	}
	return c
}

// isUnix reports whether c is a Unix-socket connection, where the socket file's
// permissions decide who may connect.
func isUnix(c net.Conn) bool {
	_, ok := unwrap(c).(*net.UnixConn)
	return ok
}

// peerOf reads the credentials of the process that made the Unix-socket
// connection c (through its wrappers); nil when c is not one or the kernel does
// not say.
func peerOf(c net.Conn) *Peer {
	uc, ok := unwrap(c).(*net.UnixConn)
	if !ok {
		return nil
	}
	if p, ok := fakePeers.Load(uc.LocalAddr().String()); ok { // tests only
		p := p.(Peer)
		return &p
	}
	return peerCred(uc)
}

// fakePeers maps the path of a Unix socket to the identity its connections are
// given instead of their own: set by tests only (export_test.go), where every
// connection comes from the test's own uid and the per-user limits and the
// admin check need others. Empty in the daemon.
var fakePeers sync.Map
