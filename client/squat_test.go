//go:build linux

package client_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
)

// squatterPy binds a Unix socket as uid 65534 (another user) and writes how many
// bytes its clients sent it to a file.
const squatterPy = `
import os, socket, sys
path, out = sys.argv[1], sys.argv[2]
os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(16)
print("ready", flush=True)
n = 0
while True:
    c, _ = s.accept()
    c.settimeout(2.0)
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            n += len(b)
            with open(out, "w") as f:
                f.write(str(n))
    except OSError:
        pass
    c.close()
`

// squat has another user (uid 65534) bind path; it returns the file that counts
// what it was sent. Root only: it takes setuid.
func squat(t *testing.T, path string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to play the other user")
	}
	got := filepath.Join(filepath.Dir(path), "received")
	cmd := exec.Command(py, "-c", squatterPy, path, got)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); !strings.HasPrefix(line, "ready") {
		t.Fatalf("the other user's process did not bind %s", path)
	}
	return got
}

// shared is a directory every user may write (as a careless /tmp would be).
func shared(t *testing.T) string {
	if os.Getuid() != 0 {
		t.Skip("needs root, to play another user")
	}
	dir, err := os.MkdirTemp("", "salus-squat-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	return dir
}

func received(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// A default socket that another user took is refused before anything is sent:
// no job name, no token reaches them.
func TestDefaultSocketTakenByAnotherUserIsRefused(t *testing.T) {
	dir := shared(t)
	own := filepath.Join(dir, "salus.sock")
	got := squat(t, own)
	defer client.SetDefaultSockets(own, filepath.Join(dir, "system.sock"))()
	for _, addr := range []string{"", client.DefaultAddr} {
		_, err := client.Open(context.Background(), addr, client.Options{Job: "secret-job", PersistentMiB: 1, EphemeralMiB: 1, Reconnect: -1})
		if err == nil || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("open at the default socket (%q) taken by uid 65534: %v; want it refused naming the uid", addr, err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := received(got); n != "" {
		t.Errorf("the other user received %s bytes", n)
	}
}

// A session whose daemon went away does not resume at a socket that another
// user took meanwhile: it refuses it before it sends its resume token, and
// gives up once its window has passed.
func TestReconnectRefusesAnotherUsersSocket(t *testing.T) {
	dir := shared(t)
	_, px := daemon(t, 10*time.Second)
	front := filepath.Join(dir, "front.sock")
	px2 := &proxy{t: t, front: front, back: px.back}
	px2.listen()
	s, err := client.Open(context.Background(), "unix:"+front, client.Options{Job: "secret-job", PersistentMiB: 1, EphemeralMiB: 1, Reconnect: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	px2.cut()
	os.Remove(front)
	got := squat(t, front)
	err = s.Begin()
	if err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("the reconnection to a socket taken by uid 65534: %v; want it refused naming the uid", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := received(got); n != "" {
		t.Errorf("the other user received %s bytes of the session's resume", n)
	}
}
