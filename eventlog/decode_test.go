package eventlog

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The fast decoder must agree with encoding/json on every line it accepts, and
// accept every line Append writes with plain strings.
func TestDecodeFastAgreesWithEncodingJSON(t *testing.T) {
	written := []Event{
		{T: 0, Kind: Run, Policy: "fair", Mode: "salus", Engine: "sim", Trace: "salus100", Device: "P100", Seed: 7, CapacityMiB: 14336},
		{T: 1.5, Kind: Arrive, Job: "j1", Model: "vgg16", JobKind: "train", Iterations: 10, StartupS: 4.25, DeclaredS: 9, AloneS: 12.5, PersistentMiB: 1.5, EphemeralMiB: 300},
		{T: 2, Kind: Admit, Job: "j1", Lane: 0, LaneMiB: 14336, HoldsGPU: true},
		{T: 3.000001, Kind: IterStart, Job: "j1", Lane: 2, Prev: "j0"},
		{T: 4, Kind: IterEnd, Job: "j1", Lane: 0, GPU: 0.1},
		{T: 4, Kind: Memory, Lane: 3, PersistentMiB: 10, EphemeralMiB: 20, LaneMiB: 40, Jobs: 2},
		{T: 5e-6, Kind: Served, Job: "j1", Latency: 0.02},
		{T: 5, Kind: Lost, Job: "j1", Reason: "lease expired: no call for 3s"},
		{T: 1.5, Kind: Arrive, Job: "j2", Model: "cnn", Batch: 64, PersistentMiB: 3, EphemeralMiB: 40},
		{T: 6, Kind: Measured, Job: "j2", IterS: 0.0375, PeakMiB: 812.5, PersistentMiB: 300, Iterations: 5},
	}
	for _, e := range written {
		line := Append(nil, e)
		var fast Event
		if !decodeFast(line, &fast) {
			t.Errorf("fast decoder refused %s", line)
			continue
		}
		var slow Event
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, slow) || !reflect.DeepEqual(fast, e) {
			t.Errorf("%s: fast %+v, encoding/json %+v, written %+v", line, fast, slow, e)
		}
	}
	// Lines the fast decoder must leave to encoding/json: it must refuse them,
	// never decode them differently.
	refused := []string{
		`{"t":1,"ev":"arrive","job":"a\"b"}`,    // escape
		`{"t":1,"ev":"arrive","job":"é"}`,       // non-ASCII
		`{"t":1,"ev":"arrive","extra":{"a":1}}`, // unknown key, nesting
		`{"t":01,"ev":"arrive"}`,                // not a JSON number
		`{"t":1,"ev":"admit","lane":1.5}`,       // not a whole number
		`{"t":Inf,"ev":"admit"}`,
		`{"t":null,"ev":"admit"}`,
		`{"t":1,"ev":"admit","holds_gpu":1}`,
		`{"t":1,"ev":"admit"`,
		`{"t":1,"ev":"admit"} x`,
		`{"T":1,"ev":"admit"}`, // encoding/json matches keys case-insensitively
	}
	for _, line := range refused {
		var e Event
		if decodeFast([]byte(line), &e) {
			t.Errorf("fast decoder accepted %s as %+v", line, e)
		}
	}
	var e Event
	if !decodeFast([]byte(` { "t" : 1.25e2 , "ev" : "finish" , "job" : "x" } `), &e) || e.T != 125 || e.Kind != Finish || e.Job != "x" {
		t.Errorf("spaces: got %+v", e)
	}
}

func BenchmarkDecode(b *testing.B) {
	line := Append(nil, Event{T: 1234.567891, Kind: IterEnd, Job: "job-042", Lane: 3, GPU: 0.54842})
	b.Run("fast", func(b *testing.B) {
		var e Event
		for b.Loop() {
			decodeFast(line, &e)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		var e Event
		for b.Loop() {
			e = Event{}
			json.Unmarshal(line, &e)
		}
	})
}
