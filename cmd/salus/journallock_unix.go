//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// lockJournal takes the journal at path for this daemon alone: an exclusive
// flock on PATH.lock, held while the process lives (the kernel lets it go when
// the process ends, even by kill -9). A second daemon on the same journal is
// refused, naming the file and the daemon that holds it, before it reads or
// writes anything: two daemons appending to one journal would interleave two
// runs that salus report can no longer read apart.
func lockJournal(path string) (*os.File, error) {
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--events %s: cannot create its lock file %s: %w", path, lock, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "another salus serve"
		if b, rerr := os.ReadFile(lock); rerr == nil && strings.TrimSpace(string(b)) != "" {
			holder = strings.TrimSpace(string(b))
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("--events %s: the journal is in use by %s (its lock %s): give this daemon a journal of its own, or stop the other daemon first", path, holder, lock)
		}
		return nil, fmt.Errorf("--events %s: cannot lock %s: %w", path, lock, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "the salus serve of pid %d, started %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	return f, nil
}
