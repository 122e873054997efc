package server_test

import (
	"fmt"
	"slices"
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

// idleMemoryRun: job a, admitted and idle, holds memory that job b waits for.
// The idle timeout (an hour, so the idler's ticker never fires within the test)
// is applied by the test at chosen wall-clock times (ReclaimIdleAt): not at the
// timeout, since a has not been idle longer; at the timeout plus one of the
// idler's periods (an eighth of it), a is evicted and b admitted, in that order.
func idleMemoryRun(t *testing.T, policy string, aPers, aEph float64, iterate bool) {
	const timeout = time.Hour
	d := start(t, policy, 1000, func(c *server.Config) { c.IdleTimeout = timeout })
	t0 := time.Now()
	a := rawConn(t, d)
	if rep := a.call(fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":"a","persistent_mib":%g,"ephemeral_mib":%g}`, aPers, aEph)); rep["ok"] != true {
		t.Fatal(rep)
	}
	if iterate {
		a.call(`{"op":"begin","id":2}`)
		if rep := a.call(`{"op":"end","id":3}`); rep["ok"] != true {
			t.Fatal(rep)
		}
		waitFor(t, 5*time.Second, "a yields its lane at the end of the grace window", func() bool { return state(d, "a") == "idle" })
	}
	t1 := time.Now() // a has been idle since some time in [t0, t1]
	b := rawConn(t, d)
	b.sendBytes(frame(`{"op":"open","id":1,"version":1,"job":"b","persistent_mib":300,"ephemeral_mib":300}`))
	waitFor(t, 5*time.Second, "b waits for admission", func() bool { return state(d, "b") == "waiting" })

	d.ReclaimIdleAt(t0.Add(timeout)) // a idle for at most the timeout: kept
	if state(d, "a") != "idle" || state(d, "b") != "waiting" {
		t.Fatalf("at the timeout: %v, want a idle and b waiting", d.Sessions())
	}
	d.ReclaimIdleAt(t1.Add(timeout + timeout/8))
	if rep := b.readFrame(); rep["ok"] != true || rep["id"] != 1.0 {
		t.Fatalf("b's open: %v, want admitted", rep)
	}
	if rep := a.readFrame(); rep["code"] != "evicted" || !strings.Contains(fmt.Sprint(rep["error"]), "idle for 1h0m0s") {
		t.Errorf("a told %v, want code evicted, idle for 1h0m0s", rep)
	}
	var order []string
	d.log.mu.Lock()
	for _, e := range d.log.ev {
		if e.Kind == eventlog.Lost || e.Kind == eventlog.Admit {
			order = append(order, e.Kind+" "+e.Job+" "+e.Reason)
		}
	}
	d.log.mu.Unlock()
	if want := []string{"admit a ", "lost a idle for 1h0m0s", "admit b "}; !slices.Equal(order, want) {
		t.Errorf("admissions and losses %q, want %q", order, want)
	}
	if rep := b.call(`{"op":"begin","id":2}`); rep["ok"] != true {
		t.Errorf("b's begin: %v", rep)
	}
}

// TestIdlePackJobGivesBackItsMemory: under pack, a job admitted into a lane of
// its own that never begins holds memory a waiting job needs: past the idle
// timeout it is evicted and the waiting job admitted (its lane time alone would
// let no one in; before, the waiting job waited for as long as a lived).
func TestIdlePackJobGivesBackItsMemory(t *testing.T) {
	idleMemoryRun(t, "pack", 300, 300, false)
}

// TestIdleFairJobGivesBackItsMemory: under fair, one lane the size of the GPU;
// a job that ran an iteration and stopped (its lane yielded at the end of the
// grace window) holds persistent memory the waiting job needs.
func TestIdleFairJobGivesBackItsMemory(t *testing.T) {
	idleMemoryRun(t, "fair", 600, 300, true)
}

// TestIdleJobsNotTakenWhenNobodyWaits: past the timeout, with nobody waiting
// for admission, idle jobs under pack keep their memory.
func TestIdleJobsNotTakenWhenNobodyWaits(t *testing.T) {
	d := start(t, "pack", 1000, func(c *server.Config) { c.IdleTimeout = time.Hour })
	a := open(t, d, "a", 100, 100, 1)
	d.ReclaimIdleAt(time.Now().Add(24 * time.Hour))
	if state(d, "a") != "idle" {
		t.Fatalf("a taken while nobody waited: %v", d.Sessions())
	}
	a.Close(true)
}
