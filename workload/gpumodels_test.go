package workload

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// gpu_models reads as models separated by |, in CSV and JSON (a list too), and
// writes back the same.
func TestGPUModels(t *testing.T) {
	csv := "job_id,model,batch_size,iterations,arrival_s,gpu_models\na,resnet50,50,10,0,a100| H100\nb,resnet50,50,10,1,\n"
	tr, err := ParseTrace([]byte(csv), "t.csv", "t", Default())
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Jobs[0].GPUModels; !slices.Equal(got, []string{"a100", "H100"}) || tr.Jobs[1].GPUModels != nil {
		t.Fatalf("gpu_models %v and %v, want [a100 H100] and none", got, tr.Jobs[1].GPUModels)
	}
	if got := tr.Jobs[0].CoreJob().GPUModels; !slices.Equal(got, []string{"a100", "H100"}) {
		t.Errorf("the core's job allows %v", got)
	}
	var out bytes.Buffer
	if err := tr.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "a100|H100") {
		t.Errorf("written back as %q", out.String())
	}
	jl := `{"job_id":"a","model":"resnet50","batch_size":50,"iterations":10,"arrival_s":0,"gpu_models":["v100","t4"]}` + "\n"
	tr, err = ParseTrace([]byte(jl), "t.jsonl", "t", Default())
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Jobs[0].GPUModels; !slices.Equal(got, []string{"v100", "t4"}) {
		t.Errorf("JSON list read as %v", got)
	}
	_, err = ParseTrace([]byte("job_id,model,batch_size,iterations,arrival_s,gpu_models\na,resnet50,50,10,0,a100||t4\n"), "bad.csv", "t", Default())
	if err == nil || !strings.Contains(err.Error(), `bad.csv:2: field "gpu_models"`) {
		t.Errorf("an empty model: %v", err)
	}
}

// timed_on reads reference (any case) or empty, in CSV and JSON, writes back
// the same, and names the field and what to give otherwise.
func TestTimedOn(t *testing.T) {
	csv := "job_id,model,batch_size,iterations,arrival_s,timed_on\na,resnet50,50,10,0,Reference\nb,resnet50,50,10,1,\n"
	tr, err := ParseTrace([]byte(csv), "t.csv", "t", Default())
	if err != nil {
		t.Fatal(err)
	}
	if tr.Jobs[0].TimedOn != TimedOnReference || tr.Jobs[1].TimedOn != "" {
		t.Fatalf("timed_on %q and %q, want %q and none", tr.Jobs[0].TimedOn, tr.Jobs[1].TimedOn, TimedOnReference)
	}
	var out bytes.Buffer
	if err := tr.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	back, err := ParseTrace(out.Bytes(), "back.csv", "t", Default())
	if err != nil {
		t.Fatal(err)
	}
	if back.Jobs[0].TimedOn != TimedOnReference || back.Jobs[1].TimedOn != "" {
		t.Errorf("written back as %q", out.String())
	}
	jl := `{"job_id":"a","model":"resnet50","batch_size":50,"iterations":10,"arrival_s":0,"timed_on":"reference"}` + "\n"
	if tr, err = ParseTrace([]byte(jl), "t.jsonl", "t", Default()); err != nil || tr.Jobs[0].TimedOn != TimedOnReference {
		t.Errorf("JSON: %v, %+v", err, tr)
	}
	_, err = ParseTrace([]byte("job_id,model,batch_size,iterations,arrival_s,timed_on\na,resnet50,50,10,0,gpu\n"), "bad.csv", "t", Default())
	if err == nil || !strings.Contains(err.Error(), `bad.csv:2: field "timed_on"`) || !strings.Contains(err.Error(), "give reference") {
		t.Errorf("timed_on gpu: %v", err)
	}
}
