package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/server"
)

// disk is a journal's file system that fills: writes succeed while there is
// room (the last one partly), then fail with ENOSPC until room is made again.
type disk struct {
	mu   sync.Mutex
	b    bytes.Buffer
	room int
}

func (d *disk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := min(len(p), d.room)
	d.b.Write(p[:n])
	d.room -= n
	if n < len(p) {
		return n, &os.PathError{Op: "write", Path: "live.jsonl", Err: syscall.ENOSPC}
	}
	return n, nil
}

func (d *disk) setRoom(n int) {
	d.mu.Lock()
	d.room = n
	d.mu.Unlock()
}

func (d *disk) bytes() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.Clone(d.b.Bytes())
}

// journaled counts the iteration ends of job that are on the disk.
func (d *disk) journaled(job string) int {
	return bytes.Count(d.bytes(), []byte(`"ev":"iter_end","job":"`+job+`"`))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// until polls cond (a state the daemon reaches by itself) for up to 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

// scrape returns the value of a /metrics series.
func scrape(t *testing.T, h http.Handler, series string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s", series)
	return ""
}

// TestFullDiskFailsClosed: the journal's file system fills while two jobs
// iterate, one with begin and end, one with end and next. No iteration's end is
// answered before its event is in the journal: each reply is checked against
// the disk when it arrives. While the disk is full, new opens are refused with
// journal_unavailable (fast path and connect API), /metrics and GetStats say the
// journal is failing and count its write errors, and the daemon retries by
// itself; once there is room, it writes what it kept, answers the ends that
// waited and goes on. (Before, the daemon went on acknowledging iterations it
// no longer wrote, and its journal stayed silent until a restart.)
func TestFullDiskFailsClosed(t *testing.T) {
	dk := &disk{room: 1 << 30}
	log := eventlog.NewAppender(dk)
	log.SetFlushEach(true)
	d := start(t, "pack", 14000, func(c *server.Config) { c.Log = log })
	hs := httptest.NewServer(d.Handler())
	defer hs.Close()
	a, b := rawConn(t, d), rawConn(t, d)
	for job, c := range map[string]*raw{"a": a, "b": b} {
		if rep := c.call(`{"op":"open","id":1,"version":1,"job":"` + job + `","persistent_mib":100,"ephemeral_mib":100}`); rep["ok"] != true {
			t.Fatal(rep)
		}
	}
	acked := map[string]int{}
	// ack takes a reply that acknowledges an iteration's end of job, and checks
	// that the end is in the journal.
	ack := func(job string, rep map[string]any) {
		t.Helper()
		if rep["ok"] != true {
			t.Fatalf("%s: %v", job, rep)
		}
		acked[job]++
		if n := dk.journaled(job); n < acked[job] {
			t.Errorf("%s: iteration %d acknowledged, %d in the journal", job, acked[job], n)
		}
	}
	id := map[string]int{"a": 2, "b": 2}
	send := func(c *raw, job, body string) {
		c.sendBytes(frame(strings.Replace(body, "ID", strconv.Itoa(id[job]), 1)))
		id[job]++
	}
	// b: one begin, then end with next.
	send(b, "b", `{"op":"begin","id":ID}`)
	if rep := b.readFrame(); rep["ok"] != true {
		t.Fatal(rep)
	}
	for range 3 {
		send(a, "a", `{"op":"begin","id":ID}`)
		if rep := a.readFrame(); rep["ok"] != true {
			t.Fatal(rep)
		}
		send(a, "a", `{"op":"end","id":ID}`)
		ack("a", a.readFrame())
		send(b, "b", `{"op":"end","id":ID,"next":true}`)
		ack("b", b.readFrame())
	}
	send(a, "a", `{"op":"begin","id":ID}`)
	if rep := a.readFrame(); rep["ok"] != true {
		t.Fatal(rep)
	}
	// Both iterate; the disk fills.
	dk.setRoom(0)
	send(a, "a", `{"op":"end","id":ID}`)
	send(b, "b", `{"op":"end","id":ID,"next":true}`)
	until(t, "the journal said failing", func() bool { return d.Stats().Journal == "failing" })
	until(t, "the daemon retried", func() bool { return d.Stats().JournalWriteErrors >= 3 })
	st := d.Stats()
	if !strings.Contains(st.JournalError, "no space left on device") || st.JournalUnwrittenBytes == 0 {
		t.Errorf("stats while the disk is full: %+v", st)
	}
	if got := scrape(t, d.Handler(), "salus_journal_healthy"); got != "0" {
		t.Errorf("salus_journal_healthy %s while the disk is full, want 0", got)
	}
	if got, _ := strconv.Atoi(scrape(t, d.Handler(), "salus_journal_write_errors_total")); got < 3 {
		t.Errorf("salus_journal_write_errors_total %d, want the failed write and its retries", got)
	}
	c := rawConn(t, d)
	if rep := c.call(`{"op":"open","id":1,"version":1,"job":"c","persistent_mib":100,"ephemeral_mib":100}`); rep["code"] != "journal_unavailable" ||
		!strings.Contains(rep["error"].(string), "journal") {
		t.Errorf("open while the disk is full: %v", rep)
	}
	resp, err := http.Post(hs.URL+salusv1connect.SchedulerServiceOpenSessionProcedure, "application/json",
		strings.NewReader(`{"job":"web","persistentMib":100,"ephemeralMib":100}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "journal_unavailable") {
		t.Errorf("OpenSession while the disk is full: %d %s", resp.StatusCode, body)
	}
	// Nothing was answered meanwhile (an answer now would acknowledge an end
	// that is not on the disk).
	for job, c := range map[string]*raw{"a": a, "b": b} {
		c.c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, err := c.c.Read(make([]byte, 1)); n > 0 || !isTimeout(err) {
			t.Errorf("%s answered while the disk is full (%d bytes, %v)", job, n, err)
		}
	}
	if st := d.Stats(); st.Iterations != 8 {
		t.Errorf("%d iterations ended, want 8: the ends were processed, only not answered", st.Iterations)
	}

	// Room again: the daemon resumes by itself.
	dk.setRoom(1 << 30)
	ack("a", a.readFrame())
	ack("b", b.readFrame())
	until(t, "the journal said ok", func() bool { return d.Stats().Journal == "ok" })
	if got := scrape(t, d.Handler(), "salus_journal_healthy"); got != "1" {
		t.Errorf("salus_journal_healthy %s once written again, want 1", got)
	}
	if rep := c.call(`{"op":"open","id":2,"version":1,"job":"c","persistent_mib":100,"ephemeral_mib":100}`); rep["ok"] != true {
		t.Errorf("open once the journal is written again: %v", rep)
	}
	for range 2 {
		send(a, "a", `{"op":"begin","id":ID}`)
		a.readFrame()
		send(a, "a", `{"op":"end","id":ID}`)
		ack("a", a.readFrame())
		send(b, "b", `{"op":"end","id":ID,"next":true}`)
		ack("b", b.readFrame())
	}
	for _, c := range []*raw{a, b, c} {
		c.call(`{"op":"close","id":99}`)
	}
	// The journal is whole: every acknowledged iteration, in order, once.
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	os.WriteFile(path, dk.bytes(), 0o644)
	res, err := metrics.FromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished != 3 || dk.journaled("a") != acked["a"] || dk.journaled("b") != acked["b"] {
		t.Errorf("journal: %d finished, a %d ends (%d acknowledged), b %d ends (%d acknowledged)",
			res.Finished, dk.journaled("a"), acked["a"], dk.journaled("b"), acked["b"])
	}
}

// TestFullDiskFailsOpen: with OnJournalError "continue" the daemon goes on
// granting and acknowledging while the disk is full, says the journal is
// failing, and writes what it kept once there is room: nothing is lost unless
// it crashes meanwhile.
func TestFullDiskFailsOpen(t *testing.T) {
	dk := &disk{room: 1 << 30}
	log := eventlog.NewAppender(dk)
	log.SetFlushEach(true)
	d := start(t, "pack", 14000, func(c *server.Config) { c.Log, c.OnJournalError = log, server.JournalContinue })
	a := rawConn(t, d)
	if rep := a.call(`{"op":"open","id":1,"version":1,"job":"a","persistent_mib":100,"ephemeral_mib":100}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	a.call(`{"op":"begin","id":2}`)
	dk.setRoom(0)
	for i := range 5 {
		if rep := a.call(fmt.Sprintf(`{"op":"end","id":%d,"next":true}`, 3+i)); rep["ok"] != true {
			t.Fatalf("end %d while failing open: %v", i, rep)
		}
	}
	if st := d.Stats(); st.Journal != "failing" || dk.journaled("a") != 0 {
		t.Errorf("failing open: %+v, %d ends on the disk", st, dk.journaled("a"))
	}
	if rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"b","persistent_mib":100,"ephemeral_mib":100}`); rep["ok"] != true {
		t.Errorf("open while failing open: %v", rep)
	}
	dk.setRoom(1 << 30)
	until(t, "the journal caught up", func() bool { return d.Stats().Journal == "ok" })
	if n := dk.journaled("a"); n != 5 {
		t.Errorf("%d ends on the disk once there was room, want the 5 acknowledged", n)
	}
}

// copyJournal copies the journal at path and its segments into dir: what a kill
// -9 leaves on the disk (every event is written as it happens).
func copyJournal(t *testing.T, path, dir string) string {
	t.Helper()
	segs, err := eventlog.Segments(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(segs, path) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.Base(path))
}

// TestJournalRotates: with a small rotation size, the daemon's journal becomes
// segments and an active file that begins with a snapshot of the open sessions.
// A restart after a crash reads the active file only, and recovers the same
// sessions as from the same run's journal unrotated; the restarted daemon
// restores them, its clients resume them; and the whole run's metrics are the
// same from the rotated journal as from the unrotated one. (Before, the journal
// only grew, and a restart read all of it.)
func TestJournalRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	d, log := startRotating(t, path, nil)
	conns := map[string]*raw{}
	tokens := map[string]string{} // what each job's first open reply gave it to resume with
	for _, job := range []string{"x", "y", "z", "done"} {
		c := rawConn(t, d)
		rep := c.call(`{"op":"open","id":1,"version":1,"job":"` + job + `","persistent_mib":100,"ephemeral_mib":100,"priority":2}`)
		if rep["ok"] != true {
			t.Fatal(rep)
		}
		tokens[job], _ = rep["resume_token"].(string)
		conns[job] = c
	}
	iterateAll(t, conns, 12, "z")
	conns["done"].call(`{"op":"close","id":99}`)
	before := d.Sessions()
	if st := d.Stats(); st.JournalRotations < 2 {
		t.Fatalf("%d rotations, want several", st.JournalRotations)
	}
	crashed := copyJournal(t, path, t.TempDir())
	d.Shutdown()
	log.Close()

	jr, err := server.ReadJournal(crashed)
	if err != nil {
		t.Fatal(err)
	}
	plain := unrotated(t, crashed)
	jp, err := server.ReadJournal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(plain); len(jr.Files) != 1 || jr.Files[0] != crashed || jr.Bytes >= fi.Size()/2 {
		t.Errorf("the restart read %v (%d bytes of a run of %d)", jr.Files, jr.Bytes, fi.Size())
	}
	if !reflect.DeepEqual(jr.States(), jp.States()) || jr.LastS != jp.LastS || len(jr.States()) != 3 {
		t.Errorf("recovered from the rotated journal:\n%+v (last %v)\nfrom the plain one:\n%+v (last %v)", jr.States(), jr.LastS, jp.States(), jp.LastS)
	}

	// The restarted daemon restores them; their clients resume and finish.
	b, logB := startRotating(t, crashed, jr)
	after := b.Sessions()
	if len(after) != len(before) {
		t.Fatalf("restored %d sessions, want %d", len(after), len(before))
	}
	for i, s := range after {
		if s.Job != before[i].Job || s.Iterations != before[i].Iterations {
			t.Errorf("restored %+v, was %+v", s, before[i])
		}
	}
	conns = map[string]*raw{}
	for _, s := range after {
		c := rawConn(t, b)
		// The snapshot carried who may resume each session (its token's hash): a
		// session whose arrive event is in a rotated-away segment is still its
		// owner's.
		if rep := c.call(`{"op":"open","id":1,"version":1,"job":"` + s.Job + `","resume":true,"persistent_mib":100,"ephemeral_mib":100,"resume_token":"` + tokens[s.Job] + `"}`); rep["resumed"] != true {
			t.Fatal(rep)
		}
		conns[s.Job] = c
	}
	iterateAll(t, conns, 8, "")
	for _, c := range conns {
		c.call(`{"op":"close","id":99}`)
	}
	b.Shutdown()
	logB.Close()
	mr, err := metrics.FromFile(crashed)
	if err != nil {
		t.Fatal(err)
	}
	mp, err := metrics.FromFile(unrotated(t, crashed))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(mr, mp) || mr.Jobs != 4 || mr.Finished != 4 {
		t.Errorf("metrics of the rotated journal:\n%+v\nof the plain one:\n%+v", mr, mp)
	}
}

// startRotating starts a daemon on the journal at path that rotates it every 2
// KiB, recovering j when given.
func startRotating(t *testing.T, path string, j *server.Journal) (*daemon, *eventlog.Appender) {
	t.Helper()
	log, err := eventlog.OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	log.SetFlushEach(true)
	d := start(t, "fair", 14000, func(c *server.Config) {
		c.Log, c.JournalRotateBytes, c.Recover, c.RecoverWindow = log, 2048, j, time.Minute
	})
	return d, log
}

// iterate runs n iterations of each job (begin, end), but only 4 of skip's.
func iterateAll(t *testing.T, conns map[string]*raw, n int, skip string) {
	t.Helper()
	for i := range n {
		for job, c := range conns {
			if job == skip && i >= 4 {
				continue
			}
			for _, body := range []string{fmt.Sprintf(`{"op":"begin","id":%d}`, 2+2*i), fmt.Sprintf(`{"op":"end","id":%d}`, 3+2*i)} {
				if rep := c.call(body); rep["ok"] != true {
					t.Fatalf("%s: %s: %v", job, body, rep)
				}
			}
		}
	}
}

// unrotated writes the journal at path as one file, less its snapshots: the
// same run, never rotated.
func unrotated(t *testing.T, path string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := eventlog.ReadFile(path, func(e eventlog.Event) error {
		if e.Kind != eventlog.Snapshot {
			buf.Write(append(eventlog.Append(nil, e), '\n'))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "plain.jsonl")
	if err := os.WriteFile(plain, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return plain
}

// recoverable returns a journal of n sessions open (arrived, never admitted).
func recoverable(n int) *server.Journal {
	j := server.NewJournal()
	j.Emit(eventlog.Event{Kind: eventlog.Run, Engine: "live"})
	for i := range n {
		j.Emit(eventlog.Event{T: float64(i) * 1e-6, Kind: eventlog.Arrive, Job: "j" + strconv.Itoa(i), PersistentMiB: 1, EphemeralMiB: 1})
	}
	return j
}

// TestUnresumedSessionsLeaveInOneStep: 100,000 recovered sessions that no
// client resumes are lost when the recover window ends in one step: one
// decision, at one instant, and an API call made meanwhile is answered, seeing
// all of them or none. (Before, they left one by one, each followed by a
// decision, with the lock held: 380 s for 100,000, the API unanswered.)
func TestUnresumedSessionsLeaveInOneStep(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 sessions")
	}
	const n = 100_000
	lg := &memLog{}
	d := start(t, "fifo", 1e9, func(c *server.Config) { c.Log, c.Recover, c.RecoverWindow = lg, recoverable(n), 300*time.Millisecond })
	hs := httptest.NewServer(d.Handler())
	defer hs.Close()
	decisions := d.Decisions()
	if got := len(d.Sessions()); got != n {
		t.Fatalf("%d sessions recovered, want %d", got, n)
	}
	// The API, called over and over through the window's end.
	var seen []string
	for {
		resp, err := http.Post(hs.URL+salusv1connect.AdminServiceGetStatsProcedure, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s := string(out)
		switch {
		case strings.Contains(s, fmt.Sprintf(`"sessions":%d`, n)):
			seen = append(seen, "all")
			continue
		case !strings.Contains(s, `"sessions"`): // zero is left out
			seen = append(seen, "none")
		default:
			t.Fatalf("GetStats during the drop: %s: want all %d sessions or none", s, n)
		}
		break
	}
	if got := d.Decisions() - decisions; got != 1 {
		t.Errorf("%d decisions to lose %d sessions, want 1", got, n)
	}
	lost := 0
	at := map[float64]bool{}
	lg.mu.Lock()
	for _, e := range lg.ev {
		if e.Kind == eventlog.Lost {
			lost++
			at[e.T] = true
			if e.Reason != "not resumed after restart" {
				t.Fatalf("lost %+v", e)
			}
		}
	}
	lg.mu.Unlock()
	if lost != n || len(at) != 1 {
		t.Errorf("%d sessions logged lost at %d instants, want %d at one", lost, len(at), n)
	}
	t.Logf("GetStats answered %d times before the drop, then after it", len(seen)-1)
}

// TestMaxRecovered: a journal with more open sessions than MaxRecovered restores
// the earliest arrivals, and logs the others lost at once, saying why.
func TestMaxRecovered(t *testing.T) {
	lg := &memLog{}
	d := start(t, "fifo", 1e9, func(c *server.Config) {
		c.Log, c.Recover, c.RecoverWindow, c.MaxRecovered = lg, recoverable(12), time.Minute, 10
	})
	s := d.Sessions()
	if len(s) != 10 || s[0].Job != "j0" || s[9].Job != "j9" {
		t.Fatalf("restored %d sessions (%v): want j0 to j9", len(s), s)
	}
	for _, job := range []string{"j10", "j11"} {
		e, ok := lg.find(eventlog.Lost, job)
		if !ok || !strings.Contains(e.Reason, "held 12 open sessions, more than the 10") || !strings.Contains(e.Reason, "--max-recovered") {
			t.Errorf("%s: %+v", job, e)
		}
	}
}

// A journal that cannot be read fails the restart with what to do.
func TestReadJournalOfGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(path, []byte("not a log\nat all\n"), 0o644)
	if _, err := server.ReadJournal(path); err == nil || errors.Is(err, eventlog.ErrTruncated) {
		t.Errorf("garbage: %v", err)
	}
}

// BenchmarkLoseUnresumed measures a restart on a journal of 100,000 open
// sessions (fifo, the journal a file written as salus serve writes it):
// restoring them (start-s), and losing them all at the end of the recover
// window (the op).
func BenchmarkLoseUnresumed(b *testing.B) {
	const n = 100_000
	var startup time.Duration
	for range b.N {
		b.StopTimer()
		j := recoverable(n)
		log, err := eventlog.OpenAppend(filepath.Join(b.TempDir(), "live.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		log.SetFlushEach(true) // as salus serve --events writes it
		t0 := time.Now()
		d := start(b, "fifo", 1e9, func(c *server.Config) { c.Log, c.Recover, c.RecoverWindow = log, j, time.Hour })
		startup += time.Since(t0)
		b.StartTimer()
		d.LoseUnclaimedNow()
		b.StopTimer()
		if len(d.Sessions()) != 0 {
			b.Fatal("sessions left")
		}
		d.Shutdown()
		log.Close()
	}
	b.ReportMetric(startup.Seconds()/float64(b.N), "start-s")
}
