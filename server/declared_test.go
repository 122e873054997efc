package server_test

import (
	"strings"
	"testing"

	"github.com/salusgo/salus/server"
)

// A job that declares no GPU time is never taken to need none: under srtf, which
// orders by it, the open is refused with what to send, or the time is estimated
// from the catalog when the model and the iterations are known. Other policies
// do not need it.
func TestMissingDeclaredTime(t *testing.T) {
	models := func(cfg *server.Config) {
		cfg.Models = func(name string) (server.Model, bool) {
			if name == "resnet50" {
				return server.Model{PersistentMiB: 100, EphemeralMiB: 200, IterS: 0.2, StartupS: 30}, true
			}
			return server.Model{}, false
		}
	}
	d := start(t, "srtf", 10000, models)
	r := rawConn(t, d)
	rep := r.call(`{"op":"open","id":1,"version":1,"job":"nodecl","persistent_mib":100,"ephemeral_mib":100}`)
	if rep["ok"] != false || rep["code"] != "rejected" || !strings.Contains(rep["error"].(string), "declared_s") {
		t.Fatalf("open without a declared time under srtf: %v", rep)
	}
	for _, body := range []string{`{"op":"open","id":1,"version":1,"job":"a","declared_s":0}`, `{"op":"open","id":1,"version":1,"job":"a","declared_s":-3}`, `{"op":"open","id":1,"version":1,"job":"a","declared_s":1e300}`} {
		if rep := rawConn(t, d).call(body); rep["ok"] != false {
			t.Errorf("%s: accepted: %v", body, rep)
		}
	}
	// A catalog model and iterations: iterations x iteration time, start-up excluded.
	if rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"est","model":"resnet50","iterations":50}`); rep["ok"] != true {
		t.Fatalf("open with model and iterations: %v", rep)
	}
	if e, ok := d.log.find("arrive", "est"); !ok || e.DeclaredS != 10 {
		t.Errorf("estimated declared time %v, want 50 x 0.2 s = 10 s (start-up excluded)", e.DeclaredS)
	}
	if rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"given","persistent_mib":1,"ephemeral_mib":1,"declared_s":7}`); rep["ok"] != true {
		t.Fatalf("open with a declared time: %v", rep)
	}

	// fair orders by attained time: no declared time is needed.
	f := start(t, "fair", 10000, nil)
	if rep := rawConn(t, f).call(`{"op":"open","id":1,"version":1,"job":"nodecl","persistent_mib":100,"ephemeral_mib":100}`); rep["ok"] != true {
		t.Fatalf("open without a declared time under fair: %v", rep)
	}
}
