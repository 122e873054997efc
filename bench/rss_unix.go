//go:build unix

package bench

import (
	"os/exec"
	"runtime"
	"syscall"
)

// maxRSSMiB is the peak resident memory of the ended child process, MiB.
func maxRSSMiB(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return 0
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	kib := float64(ru.Maxrss)
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" { // bytes there, KiB elsewhere
		kib /= 1024
	}
	return kib / 1024
}
