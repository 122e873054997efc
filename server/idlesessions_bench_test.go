package server_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/protocol"
	"github.com/salusgo/salus/server"
)

// BenchmarkIdleSessions measures opens and grants beside admitted sessions that
// do nothing: 1,000 clients run jobs of 10 iterations back to back (open, begin,
// end + next 10 times, close: a new job each time, each in its own lane under
// pack, ample memory), beside 0 or 10,000 idle admitted sessions (each opened by
// a child process over its own connection, admitted into a lane of its own,
// never iterating). It reports the iterations' round trip (median and p99) and
// grants per second, and the opens' (connect to open reply; median and p99) and
// opens per second. Both must stay within 2x of the run without idle sessions:
// an open used to copy a snapshot of every lane, under the daemon's lock.
// Skipped with -short.
//
//	go test -run '^$' -bench IdleSessions -benchtime 100000x ./server
func BenchmarkIdleSessions(b *testing.B) {
	if testing.Short() {
		b.Skip("11,000 sessions: run without -short")
	}
	for _, idle := range []int{0, 10000} {
		b.Run(fmt.Sprintf("clients=1000/idle=%d", idle), func(b *testing.B) { idleSessions(b, 1000, idle) })
	}
}

// jobIterations is the length of the benchmark's jobs.
const jobIterations = 10

func idleSessions(b *testing.B, clients, idle int) {
	raiseNofile(b, uint64(2*clients+idle+1024))
	d := start(b, "pack", 1e9, func(c *server.Config) {
		c.MaxConns = -1
		c.Lease = time.Hour // the idle sessions' child sends no heartbeat
	})
	if idle > 0 {
		openIdle(b, strings.TrimPrefix(d.addr, "unix:"), idle)
		deadline := time.Now().Add(5 * time.Minute)
		for st := d.Stats(); st.Sessions < int32(idle) || st.Waiting > 0; st = d.Stats() {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d idle sessions opened in 5 minutes", st.Sessions, idle)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	jobs := max(b.N/(clients*jobIterations), 1) // per client
	grants := make([][]time.Duration, clients)
	opens := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	b.ResetTimer()
	t0 := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := make([]time.Duration, 0, jobs*jobIterations)
			o := make([]time.Duration, 0, jobs)
			for k := range jobs {
				t := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				s, err := client.Open(ctx, d.addr, client.Options{Job: fmt.Sprintf("c%d-%d", i, k), PersistentMiB: 1, EphemeralMiB: 1})
				cancel()
				if err != nil {
					b.Error(err)
					return
				}
				o = append(o, time.Since(t))
				if err := s.Begin(); err != nil {
					b.Error(err)
					return
				}
				for range jobIterations {
					t := time.Now()
					if err := s.Next(0, 0); err != nil {
						b.Error(err)
						return
					}
					g = append(g, time.Since(t))
				}
				s.End(0, 0)
				s.Close(true)
			}
			grants[i], opens[i] = g, o
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	b.StopTimer()
	report := func(name string, per [][]time.Duration) {
		var all []time.Duration
		for _, l := range per {
			all = append(all, l...)
		}
		if len(all) == 0 {
			return
		}
		slices.Sort(all)
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), name+"-median-µs")
		b.ReportMetric(float64(all[int(0.99*float64(len(all)))].Microseconds()), name+"-p99-µs")
		b.ReportMetric(float64(len(all))/el.Seconds(), name+"s/s")
	}
	report("grant", grants)
	report("open", opens)
}

// openIdle opens n idle sessions on sock from a child process, held until the
// benchmark ends.
func openIdle(b *testing.B, sock string, n int) {
	holdInChild(b, "TestIdleSessionsHelper", "SALUS_IDLE_SESSIONS", n, sock)
}

// TestIdleSessionsHelper is BenchmarkIdleSessions's child process: it opens the
// idle sessions that SALUS_IDLE_SESSIONS asks for ("N:socket"), each on its own
// connection, and holds them until its standard input closes. It does nothing in
// a normal test run.
func TestIdleSessionsHelper(t *testing.T) {
	spec := os.Getenv("SALUS_IDLE_SESSIONS")
	if spec == "" {
		t.Skip("BenchmarkIdleSessions's child process")
	}
	count, sock := childSpec(spec)
	for i := range count {
		fd := rawDial(t, sock)
		// The open reply stays unread in the socket's buffer: a few dozen bytes.
		body := fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":"idle%d","persistent_mib":1,"ephemeral_mib":1}`, i)
		if _, err := syscall.Write(fd, protocol.AppendFrame(nil, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	io.Copy(io.Discard, os.Stdin)
}
