package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

// The daemon decides admission at the instant a waiting job starts starving,
// with no event to prompt it (core.Scheduler.NextDeadline). Under srtf with
// --admission policy --starve-factor 1: a and d fill the GPU; b (declares 1 s)
// waits; c (declares 1 ms: starving at once) never fits beside a.
// When d leaves, b fits, but c, starving, blocks it; once b has waited 1 s it
// starves too and, the earlier arrival, comes first: it is admitted then, with
// no other event (before the fix it waited for a to leave).
func TestDaemonAdmitsWhenAJobStartsStarving(t *testing.T) {
	mp := core.DefaultModeParams()
	mp.Admission, mp.StarveFactor = core.AdmitByPolicy, 1
	p, err := core.Compose("", "srtf", mp)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, "srtf", 1000, func(c *server.Config) { c.Policy = p })
	a := open(t, d, "a", 600, 50, 100)
	dd := open(t, d, "d", 300, 50, 100)
	admitted := make(chan *client.Session, 2)
	wait := func(job string, pers, declared float64) {
		go func() {
			s, err := client.Open(context.Background(), d.addr, client.Options{Job: job, PersistentMiB: pers, EphemeralMiB: 50, DeclaredS: declared})
			if err != nil {
				t.Error(err)
			}
			admitted <- s
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, ok := d.log.find(eventlog.Arrive, job); ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never arrived", job)
			}
		}
	}
	wait("b", 300, 1)
	wait("c", 900, 0.001)
	time.Sleep(20 * time.Millisecond) // c starves (after 1 ms)
	dd.Close(true)
	var b *client.Session
	select {
	case b = <-admitted:
	case <-time.After(20 * time.Second):
		t.Fatal("b not admitted once it started starving")
	}
	arr, _ := d.log.find(eventlog.Arrive, "b")
	adm, ok := d.log.find(eventlog.Admit, "b")
	if !ok {
		t.Fatal("the session that was admitted is not b")
	}
	if w := adm.T - arr.T; w < 1-1e-3 {
		// d's leave admitted it (its starvation instant had passed by then): the
		// test proves nothing on so slow a machine, but nothing is wrong either.
		t.Logf("b admitted after %.3f s, at d's leave", w)
	}
	b.Close(true)
	a.Close(true) // c is admitted at last
	if c := <-admitted; c != nil {
		c.Close(true)
	}
}
