package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
)

// A client's measurement is checked, then logged as the client's word; it never
// changes what the daemon logs of the iterations.
func TestMeasuredIsCheckedAndLogged(t *testing.T) {
	d := start(t, "fair", 14000, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.Open(ctx, d.addr, client.Options{Job: "m", PersistentMiB: 100, EphemeralMiB: 200, DeclaredS: 1, BatchSize: 64, Model: "cnn"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.AcceptsMeasured {
		t.Fatal("the open reply does not say the daemon accepts measured")
	}
	for range 3 {
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := s.End(time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
	}
	c := rawConn(t, d)
	if rep := c.call(`{"op":"open","id":1,"version":1,"job":"r","persistent_mib":1,"ephemeral_mib":1,"declared_s":1}`); rep["ok"] != true {
		t.Fatalf("open: %v", rep)
	}
	for _, tc := range []struct{ body, field string }{
		{`"iter_s":-1,"iterations":1`, "iter_s"},
		{`"iter_s":1e9,"iterations":1`, "iter_s"},
		{`"iter_s":0.1`, "iterations"},
		{`"iterations":1`, "iter_s"},
		{`"iter_s":0.1,"iterations":1,"peak_mib":-5`, "peak_mib"},
		{`"iter_s":0.1,"iterations":1,"peak_mib":99999`, "peak_mib"},
		{`"iter_s":0.1,"iterations":1,"peak_mib":10,"persistent_mib":20`, "persistent_mib"},
		{`"iter_s":0.1,"iterations":5`, "iterations"}, // r ran none
	} {
		body := fmt.Sprintf(`{"op":"measured","id":2,%s}`, tc.body)
		rep := c.call(body)
		if rep["code"] != "bad_request" || !strings.Contains(fmt.Sprint(rep["error"]), "field "+tc.field) {
			t.Errorf("%s: %v, want bad_request naming %s", body, rep, tc.field)
		}
	}
	if err := s.Measured(0.0375, 812.5, 300, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Measured(0.0375, 812.5, 300, 4); err == nil || !strings.Contains(err.Error(), "only 3 iterations") {
		t.Errorf("4 iterations reported after 3: %v", err)
	}
	if err := s.Close(true); err != nil {
		t.Fatal(err)
	}
	e, ok := d.log.find("measured", "m")
	if !ok || e.IterS != 0.0375 || e.PeakMiB != 812.5 || e.PersistentMiB != 300 || e.Iterations != 3 {
		t.Errorf("measured event %+v (found %v)", e, ok)
	}
	if a, _ := d.log.find("arrive", "m"); a.Batch != 64 || a.Model != "cnn" {
		t.Errorf("arrive %+v: want batch 64, model cnn", a)
	}
}
