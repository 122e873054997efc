//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/salusgo/salus/eventlog"
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
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("--events %s: %w", path, lockOpenError(lock, err))
	}
	if err := ownFile(f, lock, "its lock file"); err != nil {
		f.Close()
		return nil, "", fmt.Errorf("--events %s: %w", path, err)
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
	j, err := os.OpenFile(real, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.ELOOP) {
			err = fmt.Errorf("%s became a symbolic link as the daemon opened it: the daemon does not follow it (another user may have planted it): remove it if you did not make it", real)
		}
		return nil, "", fmt.Errorf("--events %s: %w", path, err)
	}
	if err := ownFile(j, real, "the journal"); err != nil && !hardLinkOnly(err) {
		j.Close()
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

// errHardLinks is ownFile's refusal of a file with other names (a journal may
// have them: finding 5's lock on the file itself refuses a second daemon
// through one).
var errHardLinks = errors.New("the file has other names (hard links)")

func hardLinkOnly(err error) bool { return errors.Is(err, errHardLinks) }

// ownFile refuses a file the daemon opened that it should not write: not a
// regular file, another user's, or one with other names (a hard link planted to
// a file the daemon's user may write, as a symbolic link would be).
func ownFile(f *os.File, name, what string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s is not a regular file (%v): remove it, or give the journal another path", what, name, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("%s %s belongs to %s, and this daemon runs as %s: if no salus serve runs on the journal, remove it (as its owner) or chown it to %s, or run the daemon as its owner", what, name, userName(int(st.Uid)), userName(euid), userName(euid))
	}
	if st.Nlink > 1 {
		return fmt.Errorf("%s %s: %w (%d): the daemon does not write through one (another user may have planted it): remove it", what, name, errHardLinks, st.Nlink)
	}
	return nil
}

// lockOpenError explains why the lock file could not be opened: a symbolic link
// in its place, or a lock left by another user (a daemon run as root, say).
func lockOpenError(lock string, err error) error {
	fi, lerr := os.Lstat(lock)
	switch {
	case errors.Is(err, syscall.ELOOP) || lerr == nil && fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("its lock file %s is a symbolic link: the daemon does not follow it (another user may have planted it): remove it if you did not make it, then start again", lock)
	case lerr == nil && errors.Is(err, os.ErrPermission):
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
			owner := userName(int(st.Uid))
			return fmt.Errorf("its lock file %s belongs to %s, and this daemon runs as %s, which cannot open it: a daemon run as %s left it; if none runs on the journal now, remove the lock (as %s), or run this daemon as %s", lock, owner, userName(os.Geteuid()), owner, owner, owner)
		}
	}
	return fmt.Errorf("cannot create its lock file %s: %w", lock, err)
}

// userName is "name (uid N)", or "uid N" when the name cannot be looked up.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// realPath is path with every symbolic link resolved, the file's own when it
// exists, else its folder's. The journal's name may be the user's own link to
// the journal, resolved once here; a link in a folder another user may write
// (or that another user made) is refused, never followed: a link planted
// there, to a file the daemon's user may write, would have the daemon write
// that file.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if err := trustedLink(abs); err != nil {
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

// trustedLink refuses abs when it is a symbolic link that someone other than
// the daemon's user (or root) made, or could have replaced: one owned by
// another user, or in a folder other users may write (a sticky folder, as
// /tmp, lets each remove only their own names).
func trustedLink(abs string) error {
	fi, err := os.Lstat(abs)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	dir := filepath.Dir(abs)
	di, err := os.Stat(dir)
	if err != nil {
		return err
	}
	ours := func(fi os.FileInfo) bool {
		st, ok := fi.Sys().(*syscall.Stat_t)
		return !ok || st.Uid == 0 || int(st.Uid) == os.Geteuid()
	}
	sticky := di.Mode()&os.ModeSticky != 0
	if !ours(fi) || !sticky && (!ours(di) || di.Mode().Perm()&0o022 != 0) {
		return fmt.Errorf("a symbolic link in %s, a folder other users may write or own (or a link another user made): the daemon does not follow it (another user may have planted it): give the journal's real path", dir)
	}
	return nil
}

// warnReadable warns of the journal's files (FILE and its segments)
// that other users may read: the journal holds job names, owners' uids and
// token hashes. The daemon makes its files 0600, but one an older daemon made
// (0644), or a mode the operator chose, is left as it is: a warning names the
// files and the chmod that closes them.
func warnReadable(real string, logger *slog.Logger) {
	segs, _ := eventlog.Segments(real)
	var open []string
	for _, name := range append(segs, real) {
		if fi, err := os.Lstat(name); err == nil && fi.Mode().Perm()&0o077 != 0 {
			open = append(open, name)
		}
	}
	if len(open) > 0 {
		logger.Warn("event log: other users may read the journal's files, which hold job names, owners' uids and token hashes: chmod 600 them unless you mean to share them",
			"files", strings.Join(open, " "))
	}
}
