package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/protocol"
	"github.com/salusgo/salus/server"
)

// daemon starts an in-process daemon on a Unix socket behind a proxy that can cut
// every connection without a word, as a crash does.
func daemon(t *testing.T, window time.Duration) (*server.Server, *proxy) {
	t.Helper()
	p, _ := core.Lookup("fair")
	s, err := server.New(server.Config{Policy: p, CapacityMiB: 1000, RecoverWindow: window,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	back := filepath.Join(dir, "daemon.sock")
	l, err := net.Listen("unix", back)
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeFast(l)
	t.Cleanup(s.Shutdown)
	px := &proxy{t: t, front: filepath.Join(dir, "front.sock"), back: back}
	px.listen()
	t.Cleanup(px.cut)
	return s, px
}

type proxy struct {
	t           *testing.T
	front, back string
	mu          sync.Mutex
	l           net.Listener
	conns       []net.Conn
}

func (p *proxy) addr() string { return "unix:" + p.front }

func (p *proxy) listen() {
	l, err := net.Listen("unix", p.front)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("unix", p.back)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go func() { // the daemon's side closes under the lock: never before cut has closed every client's
				io.Copy(b, c)
				p.mu.Lock()
				b.Close()
				p.mu.Unlock()
			}()
			go func() { io.Copy(c, b); c.Close() }()
		}
	}()
}

// cut closes the listener and every connection, without a word to the client:
// the clients' sides first, then the daemon's, so that nothing the daemon does
// when it sees one session go (admit another, and answer its open) reaches a
// client.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for i := 0; i < len(p.conns); i += 2 {
		p.conns[i].Close()
	}
	for i := 1; i < len(p.conns); i += 2 {
		p.conns[i].Close()
	}
	p.conns = nil
}

// A daemon that goes away and stays away: with ContinueAlone, the job carries on
// ungated once the reconnect window has passed.
func TestContinueAlone(t *testing.T) {
	_, px := daemon(t, 10*time.Second)
	s, err := client.Open(context.Background(), px.addr(), client.Options{Job: "a", PersistentMiB: 1, EphemeralMiB: 1,
		Reconnect: 300 * time.Millisecond, ContinueAlone: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.RecoverMS != 10000 {
		t.Errorf("recover_ms %d", s.RecoverMS)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	px.cut()
	t0 := time.Now()
	if err := s.Next(0, 0); err != nil {
		t.Fatalf("next with the daemon gone: %v", err)
	}
	if el := time.Since(t0); el < 250*time.Millisecond || el > 3*time.Second || !s.Alone() {
		t.Errorf("alone %v after %v; want alone after trying for 300 ms", s.Alone(), el)
	}
	for range 3 {
		if err := s.Next(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.End(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(true); err != nil {
		t.Fatal(err)
	}
}

// Without ContinueAlone the error comes back once the window has passed; without
// a recover window (a daemon that cannot resume sessions) it comes back at once.
func TestReconnectGivesUp(t *testing.T) {
	for _, c := range []struct {
		window, reconnect time.Duration
		min, max          time.Duration
	}{
		{0, 0, 0, 200 * time.Millisecond},
		{200 * time.Millisecond, 0, 150 * time.Millisecond, 3 * time.Second},
		{10 * time.Second, -1, 0, 200 * time.Millisecond},
	} {
		_, px := daemon(t, c.window)
		s, err := client.Open(context.Background(), px.addr(), client.Options{Job: "a", PersistentMiB: 1, EphemeralMiB: 1, Reconnect: c.reconnect})
		if err != nil {
			t.Fatal(err)
		}
		px.cut()
		t0 := time.Now()
		err = s.Begin()
		if el := time.Since(t0); err == nil || !client.Ended(err) || el < c.min || el > c.max || s.Alone() {
			t.Errorf("window %v, reconnect %v: %v after %v, alone %v", c.window, c.reconnect, err, el, s.Alone())
		}
		t0 = time.Now()
		if err := s.Close(true); err == nil || time.Since(t0) > 100*time.Millisecond {
			t.Errorf("close after giving up: %v after %v; want the error at once", err, time.Since(t0))
		}
	}
}

// A daemon that is still there but lost the session (its connection closed): the
// resume is refused with code lost, and the client does not retry.
func TestResumeRefused(t *testing.T) {
	srv, px := daemon(t, 10*time.Second)
	s, err := client.Open(context.Background(), px.addr(), client.Options{Job: "a", PersistentMiB: 1, EphemeralMiB: 1})
	if err != nil {
		t.Fatal(err)
	}
	px.cut()
	for len(srv.Sessions()) > 0 {
		time.Sleep(time.Millisecond)
	}
	px.listen()
	t0 := time.Now()
	err = s.Begin()
	var e *client.Error
	if !errorsAs(err, &e) || e.Code != "lost" || time.Since(t0) > time.Second {
		t.Errorf("begin: %v after %v, want code lost at once", err, time.Since(t0))
	}
	// A daemon shutting down says so: no reconnecting either.
	s2, err := client.Open(context.Background(), px.addr(), client.Options{Job: "b", PersistentMiB: 1, EphemeralMiB: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	t0 = time.Now()
	if err := s2.Begin(); !errorsAs(err, &e) || e.Code != "shutdown" || time.Since(t0) > time.Second {
		t.Errorf("begin after shutdown: %v after %v", err, time.Since(t0))
	}
}

func errorsAs(err error, e **client.Error) bool { return errors.As(err, e) }

// journaled starts a daemon that appends its event log to path (recovering from
// it when recover is set), listening on back; it returns the daemon and a
// function that copies its log, as a kill -9 would leave it now, to a new path
// for the next daemon.
func journaled(t *testing.T, path, back string, recover bool, capacity float64) (*server.Server, func() string) {
	t.Helper()
	var j *server.Journal
	if recover {
		var err error
		if j, err = server.ReadJournal(path); err != nil {
			t.Fatal(err)
		}
	}
	f, err := eventlog.OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	f.SetFlushEach(true)
	t.Cleanup(func() { f.Close() })
	p, _ := core.Lookup("fair")
	s, err := server.New(server.Config{Policy: p, CapacityMiB: capacity, Log: f, Recover: j, RecoverWindow: time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(back)
	l, err := net.Listen("unix", back)
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeFast(l)
	t.Cleanup(s.Shutdown)
	return s, func() string {
		snapshot, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		next := path + ".crashed"
		if err := os.WriteFile(next, snapshot, 0o644); err != nil {
			t.Fatal(err)
		}
		return next
	}
}

// TestResumeAfterRestart: the daemon dies and comes back on its journal; the
// client reconnects and resumes its session with the resume token it keeps,
// mid-run or while its open still waited for admission (it chose its token
// before the first open, so it has one even without a reply), and carries on.
// A stranger without the token is refused meanwhile (resume_denied), and the
// owners' resumes still succeed after it.
func TestResumeAfterRestart(t *testing.T) {
	dir := t.TempDir()
	path, back := filepath.Join(dir, "live.jsonl"), filepath.Join(dir, "daemon.sock")
	a, snapshot := journaled(t, path, back, false, 100)
	px := &proxy{t: t, front: filepath.Join(dir, "front.sock"), back: back}
	px.listen()
	t.Cleanup(px.cut)
	run, err := client.Open(context.Background(), px.addr(), client.Options{Job: "run", PersistentMiB: 40, EphemeralMiB: 40})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Begin(); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	var wait *client.Session
	go func() {
		var err error
		wait, err = client.Open(context.Background(), px.addr(), client.Options{Job: "wait", PersistentMiB: 40, EphemeralMiB: 40,
			Reconnect: 10 * time.Second})
		waiting <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(readFile(t, path), `"ev":"arrive","job":"wait"`) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// The crash: the log as it is now, and no word to the clients (the daemon
	// must not see them go, nor tell them it stops).
	next := snapshot()
	px.cut()
	a.Shutdown()
	b, _ := journaled(t, next, back, true, 100)
	if ss := b.Sessions(); len(ss) != 2 || ss[1].Job != "wait" || ss[1].State != "waiting" {
		t.Fatalf("recovered %v, want run, and wait still waiting for admission", ss)
	}
	// A stranger, before the owners are back.
	var e *client.Error
	if _, err := client.Open(context.Background(), "unix:"+back, client.Options{Job: "run", PersistentMiB: 40, EphemeralMiB: 40, Resume: true}); !errors.As(err, &e) || e.Code != protocol.CodeResumeDenied {
		t.Errorf("a stranger's resume: %v, want resume_denied", err)
	}
	px.listen()
	if err := run.Next(0, 0); err != nil {
		t.Fatalf("next across the restart: %v", err)
	}
	if !run.Resumed {
		t.Error("run did not resume its session")
	}
	if err := run.End(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := run.Close(true); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err != nil {
		t.Fatalf("the open that waited across the restart: %v", err)
	}
	if !wait.Resumed {
		t.Errorf("wait did not resume its session: %+v", wait.Admission)
	}
	if err := wait.Begin(); err != nil {
		t.Fatal(err)
	}
	wait.End(0, 0)
	if err := wait.Close(true); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Finished != 2 || st.Lost != 0 {
		t.Errorf("stats after the restart %+v: want both finished", st)
	}
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
