package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ChildRunner is a Runner that measures each cell in a child process, made by
// command (the same program, run so that it measures the one cell and prints its
// Result as JSON on stdout). A child past the timeout is killed and the cell
// reported timed out; the child's peak resident memory (getrusage's maxrss of the
// child) is the cell's MaxRSSMiB.
func ChildRunner(command func(ctx context.Context, c Cell) *exec.Cmd) Runner {
	return func(ctx context.Context, c Cell, timeout time.Duration) (Result, error) {
		r := Result{Status: StatusTimedOut, TimeoutS: timeout.Seconds()}
		cctx := ctx
		if timeout > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		cmd := command(cctx, c)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		err := cmd.Run()
		switch {
		case err == nil: // it ended, even if the deadline passed as it did
		case ctx.Err() != nil:
			return r, ctx.Err()
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return r, nil
		default:
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return Result{}, fmt.Errorf("%d jobs under %s: the measuring process failed: %s", c.Jobs, c.Scheme, msg)
		}
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			return Result{}, fmt.Errorf("%d jobs under %s: the measuring process printed no result (%v): is %s a salus of this version?", c.Jobs, c.Scheme, err, cmd.Path)
		}
		r.MaxRSSMiB = maxRSSMiB(cmd)
		return r, nil
	}
}
