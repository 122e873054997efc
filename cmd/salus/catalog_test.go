package main

import (
	"encoding/json"
	"strings"
	"testing"
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
