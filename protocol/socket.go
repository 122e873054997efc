package protocol

import (
	"os"
	"path/filepath"
	"strconv"
)

// SystemSocket is the fast path's socket of a daemon run by root (a node's
// shared daemon): /run/salus is root's, and no other user can take its name.
const SystemSocket = "/run/salus/salus.sock"

// DefaultSocket is the fast path's socket when none is named, for the daemon
// and its clients alike: a path in a directory only the user can write, so that
// no other user can bind it first (and be sent the jobs' names and resume
// tokens): SystemSocket for root, else $XDG_RUNTIME_DIR/salus/salus.sock (the
// user's runtime directory, 0700), else TMPDIR/salus-UID/salus.sock (a directory
// the daemon makes 0700 and checks is its own).
func DefaultSocket() string {
	uid := os.Getuid()
	if uid == 0 {
		return SystemSocket
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "salus", "salus.sock")
	}
	return filepath.Join(os.TempDir(), "salus-"+strconv.Itoa(uid), "salus.sock")
}
