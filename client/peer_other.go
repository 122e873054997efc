//go:build !linux

package client

import "net"

// peerUID is unknown where SO_PEERCRED is not: the socket's directory is then
// the only check.
func peerUID(net.Conn) (uint32, bool) { return 0, false }
