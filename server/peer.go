package server

import (
	"fmt"
	"net"
)

// Peer is the process at the other end of a Unix-socket connection, as the kernel
// reports it when the connection is made (SO_PEERCRED): who opened a session, for
// the log, ListSessions and the admin check. It cannot be forged by the client.
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

// isUnix reports whether c is a Unix-socket connection, where the socket file's
// permissions decide who may connect.
func isUnix(c net.Conn) bool {
	_, ok := c.(*net.UnixConn)
	return ok
}
