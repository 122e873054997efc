package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/salusgo/salus/protocol"
	"github.com/salusgo/salus/server"
)

// Access to the daemon: its Unix sockets' mode and group, and its token files.
// The operating system decides who reaches the sockets; TCP callers present a
// token kept in a file only the daemon's user can read (server/access.go).

// defaultTokenPath is where serve keeps a token file called name, and where the
// admin commands look for it: $XDG_RUNTIME_DIR/salus/NAME (a per-user directory
// nobody else can enter), else ~/.config/salus/NAME, else NAME next to socket.
func defaultTokenPath(name, socket string) string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "salus", name)
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "salus", name)
	}
	return filepath.Join(filepath.Dir(socket), "salus-"+name)
}

const tokenPathHelp = "$XDG_RUNTIME_DIR/salus/%[1]s, else ~/.config/salus/%[1]s"

// loadToken returns the token kept at path, creating the file with a new random
// token (mode 0600, in a directory created 0700) when there is none. flag names
// the option, for errors. It refuses a file that its group or others may read or
// write, one another user owns, a symbolic link, and an empty one: each would let
// someone else know or choose the token. It refuses a directory that its group
// or others may write (unless it is sticky, as /tmp is: then nobody else can
// remove or rename the daemon's file), or that another user than the daemon's
// or root owns: whoever can write there can swap the file for one of their own
// between the daemon's checks and its read.
func loadToken(path, flag string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err := checkTokenDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		// O_EXCL: never follow a link planted at path, never reuse a file made meanwhile.
		f, cerr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if cerr == nil {
			tok := server.NewToken()
			_, err = f.WriteString(tok + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(path)
				return "", fmt.Errorf("%s %s: %w", flag, path, err)
			}
			return tok, nil
		}
		if !errors.Is(cerr, fs.ErrExist) {
			return "", fmt.Errorf("%s %s: cannot create the token file: %w", flag, path, cerr)
		}
		fi, err = os.Lstat(path) // made meanwhile: check it as any existing file
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err := checkTokenFile(path, fi); err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s %s is empty: remove it and the daemon creates one with a random token, or write a token into it", flag, path)
	}
	return tok, nil
}

// checkTokenFile refuses a token file that is not the daemon user's own secret.
func checkTokenFile(path string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("token file %s is a symbolic link: give the file itself", path)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("token file %s can be read or written by its group or others (mode %04o): run chmod 600 %s, or remove it and the daemon creates a new one", path, perm, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("token file %s belongs to uid %d, not to the daemon's user (uid %d): someone else may know its token; remove it", path, st.Uid, os.Getuid())
	}
	return nil
}

// checkTokenDir refuses a token file's directory that someone other than the
// daemon's user (or root) may write to.
func checkTokenDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("token directory %s is not a directory", dir)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("token directory %s can be written by its group or others (mode %04o): they could put a file of their own in the token's place; run chmod go-w %s, or keep the token in a directory only the daemon's user can write (--token-file)", dir, perm, dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() && st.Uid != 0 {
		return fmt.Errorf("token directory %s belongs to uid %d, neither the daemon's user (uid %d) nor root: its owner could replace the token file; keep the token in a directory of the daemon's user (--token-file)", dir, st.Uid, os.Getuid())
	}
	return nil
}

// socketModeWarning is what serve logs when --socket-mode lets others connect
// (their write bit: 0666, 0777): every user of the machine may then open
// sessions over the Unix socket, where no token is asked, and, over
// --api-socket, call the API. "" for a mode that keeps them out.
func socketModeWarning(mode os.FileMode) string {
	if mode&0o002 == 0 {
		return ""
	}
	return fmt.Sprintf("--socket-mode %04o lets every user of the machine connect to the Unix sockets, where no token is asked: give 0660 (the daemon's user and --socket-group) unless that is meant", mode)
}

// socketAccess is who may connect to the daemon's Unix sockets.
type socketAccess struct {
	mode  os.FileMode // 0: 0660
	group string      // a group name or gid; "": the daemon's primary group
}

func parseSocketMode(s string) (os.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("--socket-mode %q: give octal permission bits such as 0660 (owner and group read-write) or 0600 (owner only)", s)
	}
	return os.FileMode(m), nil
}

func (a socketAccess) gid() (int, error) {
	if a.group == "" {
		return os.Getgid(), nil
	}
	if n, err := strconv.Atoi(a.group); err == nil && n >= 0 {
		return n, nil
	}
	g, err := user.LookupGroup(a.group)
	if err != nil {
		return 0, fmt.Errorf("--socket-group %q: %w: give a group name or a numeric gid", a.group, err)
	}
	return strconv.Atoi(g.Gid)
}

// listenUnix listens on a Unix socket for path with a's mode and group, set
// before anything is served. It binds the socket at path+".new" (bound), for
// the caller to rename to path once it serves (a socket that answers at path
// is a daemon that serves). A socket file left by a daemon that died is
// replaced; one another daemon answers on is an error. The socket is created
// with no permission for group and others (umask), so nobody connects before
// its mode and group are right.
func listenUnix(path, flag string, a socketAccess) (l net.Listener, bound string, err error) {
	mode := a.mode
	if mode == 0 {
		mode = 0o660
	}
	gid, err := a.gid()
	if err != nil {
		return nil, "", err
	}
	if err := checkSocketDir(path, flag, mode, gid); err != nil {
		return nil, "", err
	}
	bound = path + ".new"
	for _, p := range []string{path, bound} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() && st.Uid != 0 {
				return nil, "", fmt.Errorf("%s %s: the socket there belongs to uid %d, not to the daemon's user (uid %d): another user made it, and clients could be sent to them; remove it (as its owner or root) or choose another path", flag, p, st.Uid, os.Getuid())
			}
			if c, err := net.Dial("unix", p); err == nil {
				c.Close()
				return nil, "", fmt.Errorf("%s %s: another daemon is listening there; stop it or choose another path", flag, p)
			}
			os.Remove(p)
		}
	}
	path = bound
	old := umask(0o177)
	l, err = net.Listen("unix", path)
	umask(old)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", flag, err)
	}
	if err := os.Chown(path, -1, gid); err != nil {
		l.Close()
		os.Remove(path)
		return nil, "", fmt.Errorf("%s %s: cannot give the socket to group %d (--socket-group): %w; the daemon's user must be a member of that group", flag, path, gid, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		l.Close()
		os.Remove(path)
		return nil, "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return l, bound, nil
}

// defaultSocket is protocol.DefaultSocket (a test's hook).
var defaultSocket = protocol.DefaultSocket

// checkSocketDir refuses a socket path whose directory someone other than the
// daemon's user (or root) may write to, unless it is sticky (as /tmp is:
// nobody else can then remove or rename the daemon's socket), or that another
// user owns: they could take the socket's name, and the clients would send them
// their jobs' names and resume tokens. The default socket's directory
// (protocol.DefaultSocket) is made when missing, 0700, and must be the
// daemon's own; it is opened to --socket-group (0710) or to all (0711) when
// --socket-mode gives them the socket, so that they can reach it.
func checkSocketDir(path, flag string, mode os.FileMode, gid int) error {
	dir := filepath.Dir(path)
	isDefault := path == defaultSocket()
	if isDefault {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("%s %s: cannot make its directory: %w", flag, path, err)
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s: %s is not a directory (a symbolic link is refused: give the real path)", flag, path, dir)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && (isDefault || fi.Mode()&fs.ModeSticky == 0) {
		return fmt.Errorf("%s %s: its directory %s can be written by its group or others (mode %04o): another user could take the socket's name; run chmod go-w %s, or give a path in a directory only the daemon's user can write", flag, path, dir, perm, dir)
	}
	if st != nil && int(st.Uid) != os.Getuid() && (isDefault || st.Uid != 0) {
		return fmt.Errorf("%s %s: its directory %s belongs to uid %d, not to the daemon's user (uid %d): its owner could take the socket's name; remove it, or give a path in a directory of the daemon's user", flag, path, dir, st.Uid, os.Getuid())
	}
	if !isDefault {
		return nil
	}
	want := os.FileMode(0o700)
	if mode&0o060 != 0 {
		want |= 0o010
		if st != nil && int(st.Gid) != gid {
			if err := os.Chown(dir, -1, gid); err != nil {
				return fmt.Errorf("%s %s: cannot give its directory %s to group %d (--socket-group): %w", flag, path, dir, gid, err)
			}
		}
	}
	if mode&0o006 != 0 {
		want |= 0o001
	}
	if fi.Mode().Perm() != want {
		if err := os.Chmod(dir, want); err != nil {
			return fmt.Errorf("%s %s: %w", flag, path, err)
		}
	}
	return nil
}
