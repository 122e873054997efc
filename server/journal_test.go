package server_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/server"
)

// startOnLog starts a daemon that appends its event log to path, after
// recovering from it when recover is set.
func startOnLog(t *testing.T, policy, path string, window time.Duration, recover bool) (*daemon, *eventlog.Appender) {
	t.Helper()
	var j *server.Journal
	if recover {
		var err error
		if j, err = server.ReadJournal(path); err != nil && !errors.Is(err, eventlog.ErrTruncated) {
			t.Fatal(err)
		}
	}
	file, err := eventlog.OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	file.SetFlushEach(true)
	d := start(t, policy, 14000, func(c *server.Config) { c.Log, c.Recover, c.RecoverWindow = file, j, window })
	return d, file
}

// TestRecoverFromTheLog: a daemon dies (its log as a kill -9 leaves it: every
// event written whole, the last line possibly cut); a new daemon restarted on the
// same log rebuilds the open sessions and holds them for the recover window. A
// client that opens its job with resume gets its session back with the same
// arrival and attained time; one that does not is logged lost after the window;
// the log of both runs reads back and gives metrics.
func TestRecoverFromTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	a, fileA := startOnLog(t, "fair", path, time.Second, false)
	conns := map[string]*raw{}
	tokens := map[string]string{} // each session's resume token, from its open reply
	for _, job := range []string{"x", "y", "gone", "web"} {
		c := rawConn(t, a)
		rep := c.call(`{"op":"open","id":1,"version":1,"job":"` + job + `","persistent_mib":100,"ephemeral_mib":100}`)
		if tok, _ := rep["resume_token"].(string); rep["ok"] != true || rep["recover_ms"] != 1000.0 || len(tok) != 64 {
			t.Fatalf("open %s: %v", job, rep)
		}
		conns[job] = c
		tokens[job] = rep["resume_token"].(string)
	}
	for i := range 3 {
		c := conns["x"]
		c.call(`{"op":"begin","id":` + strconv.Itoa(2+2*i) + `}`)
		time.Sleep(5 * time.Millisecond)
		c.call(`{"op":"end","id":` + strconv.Itoa(3+2*i) + `}`)
	}
	conns["y"].call(`{"op":"begin","id":2}`) // y dies mid-iteration
	before := a.Sessions()
	// The crash: what is on disk now is what a kill -9 leaves, plus half a line.
	snapshot, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "crashed.jsonl")
	os.WriteFile(crashed, append(snapshot, `{"t":9,"ev":"iter_e`...), 0o644)
	a.Shutdown()
	fileA.Close()

	time.Sleep(20 * time.Millisecond)
	b, fileB := startOnLog(t, "fair", crashed, 300*time.Millisecond, true)
	defer b.Shutdown()
	after := b.Sessions()
	if len(after) != 4 {
		t.Fatalf("recovered %d sessions, want 4: %v", len(after), after)
	}
	for i, s := range after {
		// The log keeps microseconds: an attained time is a sum of iterations rounded so.
		if s.Job != before[i].Job || math.Abs(s.ArrivalS-before[i].ArrivalS) > 1e-6 || math.Abs(s.AttainedS-before[i].AttainedS) > 1e-6*float64(1+s.Iterations) ||
			s.Iterations != before[i].Iterations || s.State != "idle" {
			t.Errorf("recovered %v, was %v", s, before[i])
		}
	}
	if after[0].AttainedS < 0.015 || after[0].Iterations != 3 {
		t.Errorf("x's attained time %v over %d iterations, want 3 iterations of 5 ms or more", after[0].AttainedS, after[0].Iterations)
	}
	// Calls on a recovered session need a resume first; a plain open of it is refused.
	x := rawConn(t, b)
	if rep := x.call(`{"op":"open","id":1,"version":1,"job":"x","persistent_mib":100,"ephemeral_mib":100}`); rep["code"] != "rejected" || !strings.Contains(rep["error"].(string), "resume") {
		t.Errorf("plain open of a recovered job: %v", rep)
	}
	if rep := x.call(`{"op":"open","id":2,"version":1,"job":"nobody","resume":true,"persistent_mib":1}`); rep["code"] != "lost" {
		t.Errorf("resume of an unknown job: %v", rep)
	}
	x = rawConn(t, b)
	if rep := x.call(`{"op":"open","id":1,"version":1,"job":"x","resume":true,"persistent_mib":100,"ephemeral_mib":100,"resume_token":"` + tokens["x"] + `"}`); rep["ok"] != true || rep["resumed"] != true || rep["resume_token"] != nil {
		t.Fatalf("resume x: %v", rep)
	}
	y := rawConn(t, b)
	if rep := y.call(`{"op":"open","id":1,"version":1,"job":"y","resume":true,"persistent_mib":100,"ephemeral_mib":100,"resume_token":"` + tokens["y"] + `"}`); rep["ok"] != true || rep["resumed"] != true {
		t.Fatalf("resume y: %v", rep)
	}
	// Under fair, y (less attained) runs before x, as before the restart.
	yBegin := make(chan map[string]any, 1)
	x.sendBytes(frame(`{"op":"begin","id":2}`))
	if rep := x.readFrame(); rep["ok"] != true {
		t.Fatal(rep)
	}
	y.sendBytes(frame(`{"op":"begin","id":2}`))
	go func() { yBegin <- y.readFrame() }()
	time.Sleep(10 * time.Millisecond)
	x.sendBytes(frame(`{"op":"end","id":3,"next":true}`))
	if rep := <-yBegin; rep["ok"] != true {
		t.Fatalf("y's begin: %v", rep)
	}
	for _, r := range []map[string]any{y.call(`{"op":"end","id":3}`), x.readFrame(), x.call(`{"op":"end","id":4}`),
		y.call(`{"op":"close","id":4}`), x.call(`{"op":"close","id":5}`)} {
		if r["ok"] != true {
			t.Errorf("after resuming: %v", r)
		}
	}
	// The connect API takes a recovered session back with OpenSession and resume;
	// until then, calls naming it are refused.
	hs := httptest.NewServer(b.Handler())
	defer hs.Close()
	post := func(proc, body string) (int, string) {
		resp, err := http.Post(hs.URL+proc, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, out := post(salusv1connect.SchedulerServiceBeginIterationProcedure, `{"session":"web"}`); code == 200 || !strings.Contains(out, "resume") {
		t.Errorf("begin of a recovered session not resumed: %d %s", code, out)
	}
	code, out := post(salusv1connect.SchedulerServiceOpenSessionProcedure, `{"job":"web","resume":true,"persistentMib":100,"ephemeralMib":100,"resumeToken":"`+tokens["web"]+`"}`)
	var web struct{ Secret string }
	json.Unmarshal([]byte(out), &web)
	if code != 200 || !strings.Contains(out, `"resumed":true`) || !strings.Contains(out, `"recoverMs":"300"`) || len(web.Secret) != 64 {
		t.Errorf("OpenSession with resume: %d %s; want it resumed, with a fresh secret", code, out)
	}
	// The resumed session is its resumer's: a call without the fresh secret is
	// refused (before, a resumed connect session had none, and anyone could).
	if code, out := post(salusv1connect.SchedulerServiceCloseSessionProcedure, `{"session":"web"}`); code != 403 || !strings.Contains(out, "permission_denied") {
		t.Errorf("close of the resumed session without its secret: %d %s; want 403 permission_denied", code, out)
	}
	if code, out := post(salusv1connect.SchedulerServiceCloseSessionProcedure, `{"session":"web","secret":"`+web.Secret+`"}`); code != 200 {
		t.Errorf("close: %d %s", code, out)
	}
	// "gone" is not resumed: lost once the window passes.
	deadline := time.Now().Add(5 * time.Second)
	for len(b.Sessions()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	b.Shutdown()
	fileB.Close()

	var runs, lost []eventlog.Event
	var last float64
	err = eventlog.ReadFile(crashed, func(e eventlog.Event) error {
		if e.T < last {
			t.Errorf("time went back from %v to %v: %+v", last, e.T, e)
		}
		last = e.T
		switch e.Kind {
		case eventlog.Run:
			runs = append(runs, e)
		case eventlog.Lost:
			lost = append(lost, e)
		}
		return nil
	})
	if !errors.Is(err, eventlog.ErrTruncated) {
		t.Errorf("reading both runs: %v, want the cut line reported", err)
	}
	if len(runs) != 2 || runs[1].Reason != "restart" {
		t.Errorf("run headers %+v", runs)
	}
	if len(lost) != 1 || lost[0].Job != "gone" || lost[0].Reason != "not resumed after restart" {
		t.Errorf("lost events %+v", lost)
	}
	res, err := metrics.FromFile(crashed)
	if !errors.Is(err, eventlog.ErrTruncated) {
		t.Fatalf("metrics: %v", err)
	}
	if res.Jobs != 4 || res.Finished != 3 || res.Lost != 1 {
		t.Errorf("metrics of both runs: %+v", res)
	}
	for _, j := range res.Completion {
		if j.ID == "x" && math.Abs(j.ArrivalS-before[0].ArrivalS) > 1e-6 {
			t.Errorf("x's arrival %v, was %v", j.ArrivalS, before[0].ArrivalS)
		}
	}
}

// BenchmarkRecover measures what a restart costs: reading the journal of a long
// run (1,000 sessions still open, 1,000 iterations each: a million iterations,
// two million events) and rebuilding the sessions in a new daemon. "whole" is the
// journal never rotated (--events-rotate-mib 0), read from its start; "rotated"
// the same run's journal as the daemon writes it by default (a snapshot every
// 64 MiB), read from its last snapshot on; "snapshot" one just rotated, read from
// a snapshot alone: the least a restart can read.
func BenchmarkRecover(b *testing.B) {
	dir := b.TempDir()
	const jobs, iters = 1000, 1000
	write := func(name string, rotateAt int64, atEnd bool) string {
		path := filepath.Join(dir, name)
		f, err := eventlog.OpenAppend(path)
		if err != nil {
			b.Fatal(err)
		}
		open := server.NewJournal() // what the daemon's snapshots come from
		emit := func(e eventlog.Event) {
			f.Emit(e)
			open.Emit(eventlog.Rounded(e))
			if rotateAt > 0 && f.SinceRotation() >= rotateAt {
				if err := f.Rotate(eventlog.Event{T: open.LastS, Kind: eventlog.Snapshot, Open: open.States()}); err != nil {
					b.Fatal(err)
				}
			}
		}
		emit(eventlog.Event{Kind: eventlog.Run, Policy: "fair", Engine: "live", CapacityMiB: 1e6})
		t := 0.0
		for j := range jobs {
			emit(eventlog.Event{T: t, Kind: eventlog.Arrive, Job: "job" + strconv.Itoa(j), JobKind: "train", PersistentMiB: 100, EphemeralMiB: 100})
			emit(eventlog.Event{T: t, Kind: eventlog.Admit, Job: "job" + strconv.Itoa(j), LaneMiB: 1e6})
		}
		for range iters {
			for j := range jobs {
				job := "job" + strconv.Itoa(j)
				emit(eventlog.Event{T: t, Kind: eventlog.IterStart, Job: job})
				t += 0.001
				emit(eventlog.Event{T: t, Kind: eventlog.IterEnd, Job: job, GPU: 0.001})
			}
		}
		if atEnd {
			if err := f.Rotate(eventlog.Event{T: open.LastS, Kind: eventlog.Snapshot, Open: open.States()}); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		return path
	}
	p, _ := core.Lookup("fair")
	for _, c := range []struct {
		name     string
		rotateAt int64
		atEnd    bool
	}{{"whole", 0, false}, {"rotated", server.DefaultJournalRotateBytes, false}, {"snapshot", server.DefaultJournalRotateBytes, true}} {
		path := write(c.name+".jsonl", c.rotateAt, c.atEnd)
		b.Run(c.name, func(b *testing.B) {
			var read int64
			for range b.N {
				j, err := server.ReadJournal(path)
				if err != nil {
					b.Fatal(err)
				}
				s, err := server.New(server.Config{Policy: p, CapacityMiB: 1e6, Recover: j, RecoverWindow: time.Minute,
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				if n := len(s.Sessions()); n != jobs {
					b.Fatalf("%d sessions recovered", n)
				}
				if st := s.Sessions(); st[0].Iterations != iters {
					b.Fatalf("%d iterations recovered, want %d", st[0].Iterations, iters)
				}
				s.Shutdown()
				read = j.Bytes
			}
			b.ReportMetric(float64(read)/1e6, "read-MB")
		})
	}
}
