package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/workload"
)

func TestOwnModelNeedsItsCatalogFile(t *testing.T) {
	const trace, catalog = "../../examples/own-trace.csv", "../../examples/catalog.yaml"
	out, err := run(t, "simulate", "--trace", trace, "--catalog", catalog, "--format", "json")
	if err != nil {
		t.Fatalf("with the catalog file: %v\n%s", err, out)
	}
	var rep struct {
		Runs []struct {
			MakespanS float64 `json:"makespan_s"`
			Finished  int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Runs) != 1 || rep.Runs[0].MakespanS <= 0 {
		t.Fatalf("json %v: %s", err, out)
	}
	for _, args := range [][]string{{"simulate", "--trace", trace}, {"trace", "validate", trace}, {"eval", "--trace", trace}} {
		_, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), `unknown model "transformer"`) || !strings.Contains(err.Error(), "--catalog FILE") ||
			!strings.Contains(err.Error(), "own-trace.csv:2") {
			t.Errorf("%v without the catalog: %v, want an error naming the file, line, model and --catalog", args, err)
		}
	}
	if out, err := run(t, "trace", "validate", "--catalog", catalog, trace); err != nil || !strings.Contains(out, "ok, 4 jobs") {
		t.Errorf("validate with the catalog: %v %s", err, out)
	}
	// A model the file adds does not enter the generated trace.
	plain, err1 := run(t, "simulate", "-o", "json")
	with, err2 := run(t, "simulate", "-o", "json", "--catalog", catalog)
	if err1 != nil || err2 != nil || plain != with {
		t.Errorf("the generated trace changed with a catalog that only adds a model (%v, %v)", err1, err2)
	}
}

func TestModelsMarksCatalogFileEntries(t *testing.T) {
	out, err := run(t, "models", "--catalog", "../../examples/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "transformer") {
			n++
			if !strings.HasSuffix(strings.TrimSpace(line), "catalog file") {
				t.Errorf("line %q is not marked as from the catalog file", line)
			}
		}
		if strings.HasPrefix(line, "resnet50 ") && strings.Contains(line, "catalog file") {
			t.Errorf("a default profile is marked: %q", line)
		}
	}
	if n != 2 {
		t.Errorf("%d transformer profiles listed, want 2:\n%s", n, out)
	}
	_, err = run(t, "models", "--catalog", "nonexistent.yaml")
	if err == nil || !strings.Contains(err.Error(), "nonexistent.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// sweep --catalog: the files' profiles replace those of the generated trace's
// models; the grid file keeps them, so --resume takes no --catalog.
func TestSweepTakesCatalogFiles(t *testing.T) {
	dir := t.TempDir()
	slow := dir + "/slow.yaml"
	var b strings.Builder
	b.WriteString("profiles:\n")
	// Every training profile of the catalog, ten times slower.
	out, err := run(t, "models", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ps []struct {
		Model         string  `json:"model"`
		Batch         int     `json:"batch_size"`
		Kind          string  `json:"kind"`
		IterS         float64 `json:"iter_s"`
		PersistentMiB float64 `json:"persistent_mib"`
		EphemeralMiB  float64 `json:"ephemeral_mib"`
	}
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Kind == "train" {
			fmt.Fprintf(&b, "  - {model: %s, batch_size: %d, iter_s: %g, persistent_mib: %g, ephemeral_mib: %g}\n", p.Model, p.Batch, 10*p.IterS, p.PersistentMiB, p.EphemeralMiB)
		}
	}
	if err := os.WriteFile(slow, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sweepJSON := func(args ...string) float64 {
		t.Helper()
		o := filepath.Join(dir, fmt.Sprint(len(args)))
		base := []string{"sweep", "--seeds", "1", "--load", "1", "--jobs", "4", "--workers", "1", "--policy", "fifo", "--out", o}
		if _, err := run(t, append(base, args...)...); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(o, "sweep.json"))
		if err != nil {
			t.Fatal(err)
		}
		return makespanOf(t, data)
	}
	plain, slowed := sweepJSON(), sweepJSON("--catalog", slow)
	if !(slowed > 2*plain) {
		t.Errorf("makespan %v with the slow catalog, %v without: the catalog did nothing", slowed, plain)
	}
	if _, err := run(t, "sweep", "--resume", filepath.Join(dir, "2"), "--catalog", slow); err == nil || !strings.Contains(err.Error(), "--catalog") {
		t.Errorf("--resume with --catalog: %v", err)
	}
}

// makespanOf is the first cell's mean makespan in a sweep.json.
func makespanOf(t *testing.T, data []byte) float64 {
	t.Helper()
	var v struct {
		Cells []struct {
			Metrics map[string]struct {
				Mean float64 `json:"mean"`
			} `json:"metrics"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &v); err != nil || len(v.Cells) == 0 {
		t.Fatalf("sweep.json: %v: %s", err, data)
	}
	return v.Cells[0].Metrics["makespan_s"].Mean
}

// serve --catalog: the daemon knows the file's models by name at open.
func TestServeCatalogModels(t *testing.T) {
	cat, err := loadCatalog([]string{"../../examples/catalog.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := catalogModels(cat)("transformer")
	if !ok || m.PersistentMiB != 1900 || m.EphemeralMiB != 5200 || m.IterS != 0.21 || m.Demand != 0.9 {
		t.Errorf("transformer: %+v, %v", m, ok)
	}
	if _, ok := catalogModels(workload.Default())("transformer"); ok {
		t.Error("the default catalog knows transformer")
	}
	if _, err := loadCatalog([]string{"../../examples/catalog.yaml", "../../examples/own-trace.csv"}); err == nil || !strings.Contains(err.Error(), "--catalog: ") || !strings.Contains(err.Error(), "own-trace.csv") {
		t.Errorf("a trace given as a catalog: %v", err)
	}
}
