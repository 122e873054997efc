package server_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

// BenchmarkRoundTrip measures a begin+end round trip on the Unix-socket fast path,
// with 1 and 64 concurrent clients, each in its own lane (pack, ample memory) so
// that the figure is the daemon's overhead, not time spent waiting for the lane.
// It reports the median and p99 round trip and the grants per second.
//
// mode "begin+end" sends begin, then end (two round trips per iteration); mode
// "next" sends end with next (one round trip), as the worker does.
func BenchmarkRoundTrip(b *testing.B) {
	for _, c := range []struct {
		n    int
		next bool
	}{{1, false}, {64, false}, {1, true}, {64, true}} {
		n := c.n
		mode := "begin+end"
		if c.next {
			mode = "next"
		}
		b.Run(fmt.Sprintf("%s/clients=%d", mode, n), func(b *testing.B) {
			d := start(b, "pack", 1e9, nil)
			sessions := make([]*client.Session, n)
			for i := range sessions {
				sessions[i] = open(b, d, fmt.Sprintf("j%d", i), 1, 1, 1)
			}
			per := max(b.N/n, 1)
			lat := make([][]time.Duration, n)
			var wg sync.WaitGroup
			b.ResetTimer()
			t0 := time.Now()
			for i, s := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := make([]time.Duration, 0, per)
					if c.next {
						if err := s.Begin(); err != nil {
							b.Error(err)
							return
						}
						for k := 0; k < per; k++ {
							t := time.Now()
							if err := s.Next(time.Microsecond, 0); err != nil {
								b.Error(err)
								return
							}
							l = append(l, time.Since(t))
						}
						s.End(time.Microsecond, 0)
						lat[i] = l
						return
					}
					for k := 0; k < per; k++ {
						t := time.Now()
						if err := s.Begin(); err != nil {
							b.Error(err)
							return
						}
						if err := s.End(time.Microsecond, 0); err != nil {
							b.Error(err)
							return
						}
						l = append(l, time.Since(t))
					}
					lat[i] = l
				}()
			}
			wg.Wait()
			el := time.Since(t0)
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			slices.Sort(all)
			b.ReportMetric(float64(all[len(all)/2].Microseconds()), "median-µs")
			b.ReportMetric(float64(all[int(0.99*float64(len(all)))].Microseconds()), "p99-µs")
			b.ReportMetric(float64(len(all))/el.Seconds(), "grants/s")
			for _, s := range sessions {
				s.Close(true)
			}
		})
	}
}

// BenchmarkSwitch measures the switch latency: two jobs share one lane under fair,
// so every iteration boundary hands the lane to the other job; the latency runs from
// one job calling end until the other job's begin returns.
func BenchmarkSwitch(b *testing.B) {
	d := start(b, "fair", 1e6, nil)
	a := open(b, d, "a", 1, 1, 1)
	c := open(b, d, "c", 1, 1, 1)
	var endAt atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	per := max(b.N/2, 1)
	b.ResetTimer()
	for _, s := range []*client.Session{a, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < per; k++ {
				if err := s.Begin(); err != nil {
					b.Error(err)
					return
				}
				if e := endAt.Load(); e != 0 {
					mu.Lock()
					lat = append(lat, time.Duration(time.Now().UnixNano()-e))
					mu.Unlock()
				}
				endAt.Store(time.Now().UnixNano())
				if err := s.End(time.Microsecond, 0); err != nil {
					b.Error(err)
					return
				}
			}
			s.Close(true) // lets the other job finish its last iterations
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
		b.ReportMetric(float64(lat[int(0.99*float64(len(lat)))].Microseconds()), "p99-µs")
	}
	if st := d.Stats(); st.Switches == 0 && b.N > 2 {
		b.Errorf("no switches: %+v", st)
	}
}

// BenchmarkRoundTripLogged is the end+next round trip of one client with the
// event log written to a file, as `salus serve --events` does: buffered (flushed
// by the caller from time to time) or flushed after every event (each event one
// write of its whole line, so a kill -9 loses none). Each iteration logs two
// events (iter_start, iter_end).
func BenchmarkRoundTripLogged(b *testing.B) {
	for _, each := range []bool{false, true} {
		name := "buffered"
		if each {
			name = "flush-each-event"
		}
		b.Run(name, func(b *testing.B) {
			f, err := eventlog.OpenAppend(filepath.Join(b.TempDir(), "events.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			f.SetFlushEach(each)
			d := start(b, "pack", 1e9, func(c *server.Config) { c.Log = f })
			s := open(b, d, "j", 1, 1, 1)
			if err := s.Begin(); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			t0 := time.Now()
			for range b.N {
				t := time.Now()
				if err := s.Next(0, 0); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			el := time.Since(t0)
			b.StopTimer()
			s.End(0, 0)
			s.Close(true)
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "median-µs")
			b.ReportMetric(float64(lat[int(0.99*float64(len(lat)))].Nanoseconds())/1e3, "p99-µs")
			b.ReportMetric(float64(len(lat))/el.Seconds(), "grants/s")
		})
	}
}

// BenchmarkLoad measures the daemon under load: 1,000 sessions iterating (end +
// next, each in its own lane under pack, so the figure is the daemon's overhead),
// back to back or at 100 ms an iteration, alone and beside 10,000 idle
// connections (connected, no session opened). It
// reports the active sessions' round trip (median and p99) and grants per
// second, and the daemon's memory per idle connection: Go heap and goroutine
// stacks, and the process's resident set, measured before and after the idle
// connections were accepted. The idle connections come from a child process (this
// test binary, running TestIdleConnectionsHelper), so that their client side
// costs the daemon's process nothing and both sides fit the open-file limit.
// Skipped with -short.
//
//	go test -run '^$' -bench Load -benchtime 50000x ./server
func BenchmarkLoad(b *testing.B) {
	if testing.Short() {
		b.Skip("1,000 sessions and 10,000 idle connections: run without -short")
	}
	const sessions = 1000
	for _, c := range []struct {
		idle int
		iter time.Duration
	}{{0, 0}, {10000, 0}, {0, 100 * time.Millisecond}, {10000, 100 * time.Millisecond}} {
		b.Run(fmt.Sprintf("sessions=%d/idle=%d/iter=%v", sessions, c.idle, c.iter), func(b *testing.B) { load(b, sessions, c.idle, c.iter) })
	}
}

// load runs the benchmark: each session iterates b.N/sessions times, its
// iterations taking iter (0: back to back, so that the daemon is saturated and the
// round trip measures its throughput; 100 ms: a real job's pace, so that it
// measures latency under a realistic load).
func load(b *testing.B, sessions, idle int, iter time.Duration) {
	raiseNofile(b, uint64(2*sessions+idle+1024))
	d := start(b, "pack", 1e9, func(c *server.Config) {
		c.HandshakeTimeout = time.Hour // idle connections stay for the whole run
		c.MaxConns = -1
		c.Lease = time.Minute
	})
	var perConn []float64 // memory per idle connection, reported at the end (ResetTimer deletes metrics)
	if idle > 0 {
		g0 := runtime.NumGoroutine()
		heap0, rss0 := memory()
		dialIdle(b, strings.TrimPrefix(d.addr, "unix:"), idle)
		// Each accepted connection runs one goroutine (its reader); wait for all.
		deadline := time.Now().Add(time.Minute)
		for runtime.NumGoroutine() < g0+idle {
			if time.Now().After(deadline) {
				b.Fatalf("the daemon accepted %d of %d connections in a minute", runtime.NumGoroutine()-g0, idle)
			}
			time.Sleep(10 * time.Millisecond)
		}
		heap1, rss1 := memory()
		perConn = []float64{float64(heap1-heap0) / float64(idle) / 1024, float64(rss1-rss0) / float64(idle) / 1024}
	}
	ss := make([]*client.Session, sessions)
	for i := range ss {
		ss[i] = open(b, d, fmt.Sprintf("j%d", i), 1, 1, 1)
	}
	per := max(b.N/sessions, 1)
	lat := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	b.ResetTimer()
	t0 := time.Now()
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := make([]time.Duration, 0, per)
			// Jobs do not run in step: spread their iterations over one.
			time.Sleep(iter * time.Duration(i) / time.Duration(sessions))
			if err := s.Begin(); err != nil {
				b.Error(err)
				return
			}
			for range per {
				if iter > 0 {
					time.Sleep(iter)
				}
				t := time.Now()
				if err := s.Next(iter, 0); err != nil {
					b.Error(err)
					return
				}
				l = append(l, time.Since(t))
			}
			s.End(iter, 0)
			lat[i] = l
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	b.StopTimer()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(all[int(0.99*float64(len(all)))].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(all))/el.Seconds(), "grants/s")
	if perConn != nil {
		b.ReportMetric(perConn[0], "heap+stack-KiB/idle-conn")
		b.ReportMetric(perConn[1], "rss-KiB/idle-conn")
	}
	for _, s := range ss {
		s.Close(true)
	}
}

// dialIdle opens n idle connections to sock from a child process, held until
// the benchmark ends.
func dialIdle(b *testing.B, sock string, n int) {
	holdInChild(b, "TestIdleConnectionsHelper", "SALUS_IDLE_CONNECTIONS", n, sock)
}

// holdInChild runs the test binary's helper test in a child process, told by
// the environment variable env to hold n of something on sock ("N:socket"),
// until the benchmark ends (its standard input then closes, and it exits).
func holdInChild(b *testing.B, helper, env string, n int, sock string) {
	child := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	child.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s", env, n, sock))
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		child.Wait()
	})
}

// TestIdleConnectionsHelper is BenchmarkLoad's child process: it opens the idle
// connections that SALUS_IDLE_CONNECTIONS asks for ("N:socket") and holds them
// until its standard input closes. It does nothing in a normal test run.
func TestIdleConnectionsHelper(t *testing.T) {
	spec := os.Getenv("SALUS_IDLE_CONNECTIONS")
	if spec == "" {
		t.Skip("BenchmarkLoad's child process")
	}
	count, sock := childSpec(spec)
	for range count {
		rawDial(t, sock)
	}
	io.Copy(io.Discard, os.Stdin)
}

// childSpec reads a holding child's "N:socket" and lifts its file limit to the
// hard one, for the N connections it is to hold.
func childSpec(spec string) (int, string) {
	n, sock, _ := strings.Cut(spec, ":")
	var count int
	fmt.Sscan(n, &count)
	var r syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	r.Cur = r.Max
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
	return count, sock
}

// rawDial connects a raw Unix socket to sock: nothing of Go's poller is needed
// to hold it.
func rawDial(t *testing.T, sock string) int {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		t.Fatal(err)
	}
	return fd
}

// memory returns the Go heap and goroutine stacks in use, and the process's
// resident set, in bytes, after a garbage collection.
func memory() (goBytes, rss int64) {
	debug.FreeOSMemory() // a GC that also returns free memory: the resident set is then what is live
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		var size, res uint64
		fmt.Sscan(string(b), &size, &res)
		rss = int64(res) * int64(os.Getpagesize())
	}
	return int64(m.HeapInuse + m.StackInuse), rss
}

// raiseNofile raises the process's open-file limit to at least n, or skips.
func raiseNofile(b *testing.B, n uint64) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		b.Fatal(err)
	}
	if r.Cur >= n {
		return
	}
	r.Cur = n
	r.Max = max(r.Max, n)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		b.Skipf("needs %d open files (RLIMIT_NOFILE): %v", n, err)
	}
}
