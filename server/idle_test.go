package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

// TestIdleLaneReclaimed: a job that ended an iteration and sits on its lane (a
// grace window far longer than the idle timeout) yields it to the job waiting for
// it once the timeout passes; its next begin still works and says so.
func TestIdleLaneReclaimed(t *testing.T) {
	d := start(t, "fair", 1000, func(c *server.Config) {
		c.Grace = time.Minute
		c.IdleTimeout = 100 * time.Millisecond
	})
	a := rawConn(t, d)
	a.call(`{"op":"open","id":1,"version":1,"job":"a","persistent_mib":10,"ephemeral_mib":10}`)
	a.call(`{"op":"begin","id":2}`)
	if rep := a.call(`{"op":"end","id":3}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	b := open(t, d, "b", 10, 10, 1)
	granted := make(chan error, 1)
	t0 := time.Now()
	go func() { granted <- b.Begin() }()
	select {
	case err := <-granted:
		if err != nil {
			t.Fatal(err)
		}
		if w := time.Since(t0); w < 50*time.Millisecond {
			t.Errorf("b granted after %v, before a was idle for the timeout", w)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("b still waits for the lane a sits on")
	}
	b.End(0, 0)
	rep := a.call(`{"op":"begin","id":4}`)
	if rep["ok"] != true || rep["idle_yielded"] != true {
		t.Errorf("a's next begin: %v, want ok with idle_yielded", rep)
	}
	if st := d.Stats(); st.Lost != 0 {
		t.Errorf("nobody should be lost: %+v", st)
	}
}

// TestIdleFifoJobEvicted: under fifo the admitted job holds the whole GPU, so one
// that never begins is evicted after the idle timeout, and the next job admitted.
func TestIdleFifoJobEvicted(t *testing.T) {
	d := start(t, "fifo", 1000, func(c *server.Config) { c.IdleTimeout = 100 * time.Millisecond })
	a := rawConn(t, d)
	if rep := a.call(`{"op":"open","id":1,"version":1,"job":"a","persistent_mib":10,"ephemeral_mib":10}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	// Nobody waits: a keeps the GPU however long it idles.
	time.Sleep(300 * time.Millisecond)
	if state(d, "a") != "idle" {
		t.Fatalf("a was taken while nobody waited: %v", d.Sessions())
	}
	b := open(t, d, "b", 10, 10, 1) // admitted once a is evicted
	if rep := a.readFrame(); rep["code"] != "evicted" || !strings.Contains(rep["error"].(string), "idle for 100ms") {
		t.Errorf("a told %v, want code evicted, idle for 100ms", rep)
	}
	if e, ok := d.log.find(eventlog.Lost, "a"); !ok || e.Reason != "idle for 100ms" {
		t.Errorf("lost event %+v %v", e, ok)
	}
	b.Close(true)
}

// TestHungIterationEvicted: a granted iteration that never ends, while another job
// waits for the lane, is taken for hung after the idle timeout.
func TestHungIterationEvicted(t *testing.T) {
	d := start(t, "fair", 1000, func(c *server.Config) { c.IdleTimeout = 100 * time.Millisecond })
	a := rawConn(t, d)
	a.call(`{"op":"open","id":1,"version":1,"job":"a","persistent_mib":10,"ephemeral_mib":10}`)
	a.call(`{"op":"begin","id":2}`)
	b := open(t, d, "b", 10, 10, 1)
	if err := b.Begin(); err != nil {
		t.Fatal(err)
	}
	if rep := a.readFrame(); rep["code"] != "evicted" || !strings.Contains(rep["error"].(string), "never ended") {
		t.Errorf("a told %v, want code evicted", rep)
	}
	b.End(0, 0)
	b.Close(true)
}
