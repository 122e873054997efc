package workload

import (
	"reflect"
	"strings"
	"testing"
)

func smallTrace(t *testing.T) *Trace {
	t.Helper()
	data := "job_id,model,batch_size,iterations,arrival_s\n" +
		"a,resnet50,50,100,0\nb,resnet50,50,200,10\nb#2,vae,64,300,30\nd,vae,64,50,60\ne,resnet50,50,10,100\n"
	tr, err := ParseTrace([]byte(data), "t.csv", "t", Default())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestScaleLoad(t *testing.T) {
	tr := smallTrace(t)
	if err := tr.ScaleLoad(2); err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, j := range tr.Jobs {
		got = append(got, j.ArrivalS)
	}
	if want := []float64{0, 5, 15, 30, 50}; !reflect.DeepEqual(got, want) {
		t.Errorf("arrivals at load 2: %v, want %v", got, want)
	}
	if tr.Load != 2 || tr.Name != "t-load2" {
		t.Errorf("load %v name %q, want 2 and t-load2", tr.Load, tr.Name)
	}
	if err := tr.ScaleLoad(0.5); err != nil || tr.Jobs[4].ArrivalS != 100 || tr.LoadFactor() != 1 {
		t.Errorf("load 0.5 after 2: err %v, last arrival %v, factor %v; want the original back", err, tr.Jobs[4].ArrivalS, tr.LoadFactor())
	}
	for _, bad := range []float64{0, -1} {
		if err := tr.ScaleLoad(bad); err == nil || !strings.Contains(err.Error(), "positive") {
			t.Errorf("ScaleLoad(%v): %v, want a refusal asking for a positive factor", bad, err)
		}
	}
}

func TestBootstrap(t *testing.T) {
	tr := smallTrace(t)
	orig := append([]Job(nil), tr.Jobs...)
	a, err := tr.Resample(ResampleBootstrap, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tr.Resample(ResampleBootstrap, 7)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed drew two different traces")
	}
	if !reflect.DeepEqual(tr.Jobs, orig) {
		t.Error("resampling changed the original trace")
	}
	differs := false
	for seed := int64(1); seed <= 20; seed++ {
		r, _ := tr.Resample(ResampleBootstrap, seed)
		if len(r.Jobs) != len(tr.Jobs) {
			t.Fatalf("seed %d: %d jobs, want %d", seed, len(r.Jobs), len(tr.Jobs))
		}
		ids := map[string]bool{}
		for i, j := range r.Jobs {
			if ids[j.ID] {
				t.Fatalf("seed %d: id %q twice", seed, j.ID)
			}
			ids[j.ID] = true
			if i > 0 && j.ArrivalS < r.Jobs[i-1].ArrivalS {
				t.Fatalf("seed %d: job %d arrives before the one before it", seed, i)
			}
		}
		c, _ := tr.Resample(ResampleBootstrap, seed+100)
		differs = differs || !reflect.DeepEqual(r.Jobs, c.Jobs)
	}
	if !differs {
		t.Error("twenty seeds drew the same trace")
	}
	// "b#2" is taken in the original: a second copy of b must get another name.
	if id := freshID("b", 2, map[string]bool{"b#2": true}); id != "b#2.2" {
		t.Errorf("second copy of b beside a b#2: %q, want b#2.2", id)
	}
}

func TestJitter(t *testing.T) {
	tr := smallTrace(t)
	r, err := tr.Resample(ResampleJitter, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Jobs) != len(tr.Jobs) {
		t.Fatalf("%d jobs, want %d", len(r.Jobs), len(tr.Jobs))
	}
	moved := false
	for i, j := range r.Jobs {
		if j.ID != tr.Jobs[i].ID {
			t.Fatalf("job %d is %s, want %s: jitter keeps the jobs and their order", i, j.ID, tr.Jobs[i].ID)
		}
		if i > 0 {
			gap, was := j.ArrivalS-r.Jobs[i-1].ArrivalS, tr.Jobs[i].ArrivalS-tr.Jobs[i-1].ArrivalS
			if gap < 0.5*was-1e-9 || gap > 1.5*was+1e-9 {
				t.Errorf("gap %d: %v, want within [0.5, 1.5] x %v", i, gap, was)
			}
			moved = moved || gap != was
		}
	}
	if !moved {
		t.Error("jitter moved no arrival")
	}
	if _, err := tr.Resample("shuffle", 1); err == nil || !strings.Contains(err.Error(), "bootstrap") {
		t.Errorf("unknown method: %v, want an error listing the methods", err)
	}
}
