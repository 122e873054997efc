package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads the credentials of the process that made the Unix-socket
// connection c; nil when c is not one or the kernel does not say.
func peerOf(c net.Conn) *Peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	var cred *unix.Ucred
	if raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}) != nil || err != nil {
		return nil
	}
	return &Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}
}
