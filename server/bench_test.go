package server_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
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
