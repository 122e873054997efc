//go:build !unix

package bench

import "os/exec"

// maxRSSMiB is unknown (0) where there is no getrusage.
func maxRSSMiB(*exec.Cmd) float64 { return 0 }
