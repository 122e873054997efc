//go:build unix

package eventlog

import "syscall"

// noFollow makes an open refuse a symbolic link in the name's last part: a
// journal's files are never opened through a link another user planted.
const noFollow = syscall.O_NOFOLLOW
