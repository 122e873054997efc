//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// lockJournal takes the journal at path for this daemon alone, by the file and
// not by the name it was given: a second daemon on the same journal, under its
// own name, a symbolic link to it or a hard link, is refused, naming the file
// and the daemon that holds it, before it reads or writes anything: two daemons
// appending to one journal would interleave two runs that salus report can no
// longer read apart. It takes two exclusive flocks, held while the process
// lives (the kernel lets them go when it ends, even by kill -9): on REAL.lock,
// REAL being the journal's real path (links resolved), which the journal keeps
// across rotations, and on the journal file itself (its device and inode), which
// a hard link shares. It returns the real path, which the daemon then uses (a
// rotation renames the file, not a link to it).
func lockJournal(path string) (locks []*os.File, real string, err error) {
	real, err = realPath(path)
	if err != nil {
		return nil, "", fmt.Errorf("--events %s: %w", path, err)
	}
	lock := real + ".lock"
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("--events %s: cannot create its lock file %s: %w", path, lock, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "another salus serve"
		if b, rerr := io.ReadAll(io.LimitReader(f, 200)); rerr == nil && strings.TrimSpace(string(b)) != "" {
			holder = strings.TrimSpace(string(b))
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, "", fmt.Errorf("--events %s: the journal is in use by %s (its lock %s): give this daemon a journal of its own, or stop the other daemon first", path, holder, lock)
		}
		return nil, "", fmt.Errorf("--events %s: cannot lock %s: %w", path, lock, err)
	}
	// The file itself: created empty when missing (a journal of no run).
	j, err := os.OpenFile(real, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		f.Close()
		return nil, "", fmt.Errorf("--events %s: %w", path, err)
	}
	if err := syscall.Flock(int(j.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		j.Close()
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, "", fmt.Errorf("--events %s: the journal is in use by another salus serve, through another name of the same file (a hard link): give this daemon a journal of its own, or stop the other daemon first", path)
		}
		return nil, "", fmt.Errorf("--events %s: cannot lock it: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "the salus serve of pid %d, started %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	return []*os.File{f, j}, real, nil
}

// realPath is path with every symbolic link resolved, the file's own when it
// exists, else its folder's.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Errorf("a symbolic link to a file that does not exist: give the journal's real path")
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}
