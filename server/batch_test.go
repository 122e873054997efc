package server_test

import (
	"strings"
	"testing"

	"github.com/salusgo/salus/server"
)

// A catalog model named with a batch size gets that batch's profile, never
// another's: resnet50 at batch 50 is resnet50/50/train, a batch the catalog has
// not is refused naming it, and the name alone is the model's first profile.
func TestCatalogModelAtItsBatchSize(t *testing.T) {
	profiles := map[string]server.Model{
		"resnet50":          {PersistentMiB: 293, EphemeralMiB: 1823, IterS: 0.125},
		"resnet50/25/train": {PersistentMiB: 293, EphemeralMiB: 1823, IterS: 0.125},
		"resnet50/50/train": {PersistentMiB: 293, EphemeralMiB: 3715, IterS: 0.226},
	}
	d := start(t, "pack", 20000, func(cfg *server.Config) {
		cfg.Models = func(name string) (server.Model, bool) { m, ok := profiles[name]; return m, ok }
	})
	for _, c := range []struct {
		job, body    string
		ephemeralMiB float64
		refused      string
	}{
		{"b50", `"model":"resnet50","batch_size":50`, 3715, ""},
		{"b25", `"model":"resnet50","batch_size":25`, 1823, ""},
		{"plain", `"model":"resnet50"`, 1823, ""},
		{"b75", `"model":"resnet50","batch_size":75`, 0, "no train profile at batch size 75"},
	} {
		rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"` + c.job + `",` + c.body + `}`)
		if c.refused != "" {
			if rep["ok"] != false || !strings.Contains(rep["error"].(string), c.refused) {
				t.Errorf("%s: %v, want refused with %q", c.job, rep, c.refused)
			}
			continue
		}
		if rep["ok"] != true {
			t.Fatalf("%s: %v", c.job, rep)
		}
		if e, ok := d.log.find("arrive", c.job); !ok || e.EphemeralMiB != c.ephemeralMiB {
			t.Errorf("%s: ephemeral %v MiB, want %v", c.job, e.EphemeralMiB, c.ephemeralMiB)
		}
	}
}
