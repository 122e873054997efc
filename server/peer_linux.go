package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred reads the credentials of the process that made the Unix-socket
// connection uc (SO_PEERCRED); nil when the kernel does not say.
func peerCred(uc *net.UnixConn) *Peer {
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
