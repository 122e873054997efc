//go:build unix

package main

import "syscall"

func umask(m int) int { return syscall.Umask(m) }
