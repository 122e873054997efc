package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/server"
)

// TestHugeAndNonFiniteNumbers sends huge, out-of-range and non-finite numbers in
// every numeric field of every request, on the fast path and on the connect API's
// JSON. Each is refused with bad_request naming the field, -0 is taken as 0, and
// the daemon's event log then reads back whole and gives metrics.
func TestHugeAndNonFiniteNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	file, err := eventlog.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, "fair", 14000, func(c *server.Config) { c.Log = file })
	hs := httptest.NewServer(d.Handler())
	defer hs.Close()

	openFields := []string{"persistent_mib", "ephemeral_mib", "declared_s", "startup_s", "iterations", "priority", "iter_s", "demand"}
	common := []string{"1e302", "-1e302", "1e309", "-1e309", "99999999999999999999"}
	bad := map[string][]string{
		"persistent_mib": {"4294967296", "-1"}, "ephemeral_mib": {"4294967296", "-1"},
		"declared_s": {"1e10", "-1"}, "startup_s": {"1e10", "-1"}, "iter_s": {"1e10", "-1"},
		"iterations": {"1000000000001", "-1"}, "priority": {"4294967296", "-4294967296"}, "demand": {"1.5", "-1"},
	}
	for _, field := range openFields {
		for i, v := range append(common, bad[field]...) {
			body := openBody(fmt.Sprintf("j%s%d", field, i), field, v)
			rep := rawConn(t, d).call(body)
			if rep["ok"] != false || rep["code"] != "bad_request" || !strings.Contains(fmt.Sprint(rep["error"]), field) {
				t.Errorf("%s: %v, want bad_request naming %s", body, rep, field)
			}
		}
		// -0 is 0, which every field takes.
		body := openBody("zero-"+field, field, "-0")
		c := rawConn(t, d)
		if rep := c.call(body); rep["ok"] != true {
			t.Errorf("%s: %v, want ok", body, rep)
		}
		if rep := c.call(`{"op":"close","id":2}`); rep["ok"] != true {
			t.Errorf("close: %v", rep)
		}
	}
	c := rawConn(t, d)
	if rep := c.call(`{"op":"open","id":1,"version":1,"job":"ends","persistent_mib":1,"ephemeral_mib":1}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	id := 2
	for _, field := range []string{"duration_s", "peak_mib"} {
		for _, v := range []string{"1e302", "1e309", "-1e302", "-1", "1e10"} {
			if rep := c.call(fmt.Sprintf(`{"op":"begin","id":%d}`, id)); rep["ok"] != true {
				t.Fatal(rep)
			}
			id++
			body := fmt.Sprintf(`{"op":"end","id":%d,%q:%s}`, id, field, v)
			if rep := c.call(body); rep["ok"] != false || rep["code"] != "bad_request" || !strings.Contains(fmt.Sprint(rep["error"]), field) {
				t.Errorf("%s: %v, want bad_request naming %s", body, rep, field)
			}
			id++
			if rep := c.call(fmt.Sprintf(`{"op":"end","id":%d,%q:-0}`, id, field)); rep["ok"] != true {
				t.Errorf("end with %s -0: %v", field, rep)
			}
			id++
		}
	}
	if rep := c.call(fmt.Sprintf(`{"op":"close","id":%d}`, id)); rep["ok"] != true {
		t.Errorf("close: %v", rep)
	}

	// The connect API's JSON takes NaN and infinities as strings.
	post := func(proc, body string) (int, string) {
		resp, err := http.Post(hs.URL+proc, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, field := range []string{"persistentMib", "ephemeralMib", "declaredS", "startupS", "iterS", "demand"} {
		snake := map[string]string{"persistentMib": "persistent_mib", "ephemeralMib": "ephemeral_mib", "declaredS": "declared_s",
			"startupS": "startup_s", "iterS": "iter_s", "demand": "demand"}[field]
		for _, v := range []string{`"NaN"`, `"Infinity"`, `"-Infinity"`, "1e302", "-1e302"} {
			body := fmt.Sprintf(`{"job":"c-%s",%q:%s}`, field, field, v)
			if field != "persistentMib" && field != "ephemeralMib" {
				body = fmt.Sprintf(`{"job":"c-%s","persistentMib":1,"ephemeralMib":1,%q:%s}`, field, field, v)
			}
			code, out := post(salusv1connect.SchedulerServiceOpenSessionProcedure, body)
			if code == 200 || !strings.Contains(out, snake) {
				t.Errorf("OpenSession %s: %d %s, want an error naming %s", body, code, out, snake)
			}
		}
	}
	code, out := post(salusv1connect.SchedulerServiceOpenSessionProcedure, `{"job":"c","persistentMib":1,"ephemeralMib":1}`)
	if code != 200 {
		t.Fatalf("OpenSession: %d %s", code, out)
	}
	var opened struct{ Secret string }
	if err := json.Unmarshal([]byte(out), &opened); err != nil || opened.Secret == "" {
		t.Fatalf("OpenSession reply %s: no secret (%v)", out, err)
	}
	// Later calls on the session present its secret: only its opener controls it.
	sess := fmt.Sprintf(`"session":"c","secret":%q`, opened.Secret)
	for _, field := range []string{"durationS", "peakMib"} {
		snake := map[string]string{"durationS": "duration_s", "peakMib": "peak_mib"}[field]
		for _, v := range []string{`"NaN"`, `"Infinity"`, `"-Infinity"`, "1e302"} {
			if code, out := post(salusv1connect.SchedulerServiceBeginIterationProcedure, "{"+sess+"}"); code != 200 {
				t.Fatalf("BeginIteration: %d %s", code, out)
			}
			body := fmt.Sprintf(`{%s,%q:%s}`, sess, field, v)
			code, out := post(salusv1connect.SchedulerServiceEndIterationProcedure, body)
			if code == 200 || !strings.Contains(out, snake) {
				t.Errorf("EndIteration %s: %d %s, want an error naming %s", body, code, out, snake)
			}
			if code, out := post(salusv1connect.SchedulerServiceEndIterationProcedure, "{"+sess+`,"durationS":0.001}`); code != 200 {
				t.Fatalf("EndIteration: %d %s", code, out)
			}
		}
	}
	post(salusv1connect.SchedulerServiceCloseSessionProcedure, "{"+sess+"}")

	d.Shutdown() // the log is whole once the daemon has stopped
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := eventlog.ReadFile(path, func(e eventlog.Event) error { n++; return nil }); err != nil {
		t.Fatalf("the event log does not read back: %v", err)
	}
	res, err := metrics.FromFile(path)
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		t.Fatalf("metrics of the log: %v", err)
	}
	if res.Finished != len(openFields)+2 || res.Lost != 0 {
		t.Errorf("metrics: %d finished, %d lost; want %d finished (%d events)", res.Finished, res.Lost, len(openFields)+2, n)
	}
}

// openBody is an open request with value (JSON text) in field, and 1 MiB of each
// memory unless field is one of them.
func openBody(job, field, value string) string {
	b := fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":%q,%q:%s`, job, field, value)
	for _, m := range []string{"persistent_mib", "ephemeral_mib"} {
		if m != field {
			b += fmt.Sprintf(`,%q:1`, m)
		}
	}
	return b + "}"
}

// lockedBuffer is a log file in memory.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

// FuzzNumbers puts arbitrary number tokens in every numeric field of an open and
// of an end: whatever the daemon accepts or refuses, its event log must read back
// whole after every input (go test -fuzz FuzzNumbers ./server).
func FuzzNumbers(f *testing.F) {
	for _, v := range []string{"1e302", "1e309", "-0", "0", "1", "-1", "0.5", "4294967296", "1e-320", "99999999999999999999", "00", "NaN"} {
		f.Add(uint8(0), v)
	}
	fields := []string{"persistent_mib", "ephemeral_mib", "declared_s", "startup_s", "iterations", "priority", "iter_s", "demand", "duration_s", "peak_mib"}
	buf := &lockedBuffer{}
	w := eventlog.NewWriter(buf)
	w.SetFlushEach(true)
	d := start(f, "srtf", 14000, func(c *server.Config) { c.Log = w })
	n := 0
	f.Fuzz(func(t *testing.T, field uint8, value string) {
		if strings.ContainsAny(value, `{}[]",:`) || strings.TrimSpace(value) == "" {
			t.Skip("not a number token")
		}
		name := fields[int(field)%len(fields)]
		n++
		job := fmt.Sprint("f", n)
		c := rawConn(t, d)
		open := openBody(job, name, value)
		if name == "duration_s" || name == "peak_mib" {
			open = openBody(job, "declared_s", "1")
		} else if name != "declared_s" {
			open = strings.TrimSuffix(open, "}") + `,"declared_s":1}`
		}
		call := func(body string) map[string]any { // a bad token may end the connection
			if _, err := c.c.Write(frame(body)); err != nil {
				return nil
			}
			return c.readFrame()
		}
		if rep := call(open); rep["ok"] == true {
			call(`{"op":"begin","id":2}`)
			call(fmt.Sprintf(`{"op":"end","id":3,%q:%s}`, name, value))
			call(`{"op":"end","id":4}`)
			call(`{"op":"close","id":5}`)
		}
		c.c.Close()
		if err := eventlog.Read(bytes.NewReader(buf.bytes()), "fuzz", func(eventlog.Event) error { return nil }); err != nil {
			t.Fatalf("after %s=%s the log does not read back: %v", name, value, err)
		}
	})
}
