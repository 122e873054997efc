//go:build !unix

package main

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// signalGroup kills cmd's process (there is no SIGTERM to send first).
func signalGroup(cmd *exec.Cmd, _ bool) { cmd.Process.Kill() }
