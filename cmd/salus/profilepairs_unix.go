//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a process group of its own, so that
// signalGroup reaches what it starts too (sh -c's children).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends SIGTERM (kill: SIGKILL) to cmd's process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-cmd.Process.Pid, sig)
}
