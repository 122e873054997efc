package client

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the uid of the process serving the Unix-socket connection c
// (SO_PEERCRED); false when the kernel does not say.
func peerUID(c net.Conn) (uint32, bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	if raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}) != nil || err != nil {
		return 0, false
	}
	return cred.Uid, true
}
