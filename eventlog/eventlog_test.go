package eventlog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestAppendMatchesEncodingJSON(t *testing.T) {
	events := []Event{
		{T: 0, Kind: Run, Policy: "fair", Engine: "sim", Trace: "salus100", Seed: 7, CapacityMiB: 14336},
		{T: 1.5, Kind: Arrive, Job: "j\"1", Model: "vgg16", Iterations: 10, StartupS: 4.25, DeclaredS: 9, PersistentMiB: 1.5, EphemeralMiB: 300},
		{T: 2, Kind: Admit, Job: "j1", Lane: 0, LaneMiB: 14336, HoldsGPU: true},
		{T: 3.000001, Kind: IterStart, Job: "j1", Lane: 2, Prev: "j0"},
		{T: 4, Kind: IterEnd, Job: "j1", Lane: 0, GPU: 0.1},
		{T: 5, Kind: Lost, Job: "j1", Reason: "lease expired: no call for 3s"},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, e := range events {
		w.Emit(e)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []Event
	if err := Read(&buf, "mem", func(e Event) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, events) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, events)
	}
	for _, e := range events {
		var viaJSON, viaAppend map[string]any
		b, _ := json.Marshal(e)
		json.Unmarshal(b, &viaJSON)
		json.Unmarshal(Append(nil, e), &viaAppend)
		delete(viaJSON, "lane")
		delete(viaAppend, "lane")
		if !reflect.DeepEqual(viaJSON, viaAppend) {
			t.Errorf("hand encoding differs from encoding/json:\n%v\n%v", viaAppend, viaJSON)
		}
	}
}

func TestReadNamesTheLine(t *testing.T) {
	err := Read(strings.NewReader("{\"t\":1,\"ev\":\"arrive\"}\n{\"t\":2}\n"), "run.jsonl", func(Event) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "run.jsonl:2") {
		t.Fatalf("error %v should name run.jsonl:2", err)
	}
}
