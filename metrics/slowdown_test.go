package metrics_test

import (
	"math"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

func TestJain(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{2, 2, 2}, 1},
		{[]float64{1, 0, 0, 0}, 0.25},
		{[]float64{1, 3}, 16.0 / 20},
		{nil, 0},
	} {
		if got := metrics.Jain(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// TestSlowdownFromTheLog: a takes 5 s for 5 s alone (1), b 11 s for 4 s alone
// (2.75); c's log gives no time alone, so it has no slowdown and is counted out.
func TestSlowdownFromTheLog(t *testing.T) {
	log := `{"t":0,"ev":"arrive","job":"a","startup_s":1,"alone_s":5}
{"t":0,"ev":"admit","job":"a","lane":0,"lane_mib":100,"holds_gpu":true}
{"t":1,"ev":"arrive","job":"b","startup_s":2,"alone_s":4}
{"t":1,"ev":"arrive","job":"c"}
{"t":1,"ev":"iter_start","job":"a","lane":0}
{"t":5,"ev":"iter_end","job":"a","lane":0,"gpu_s":4}
{"t":5,"ev":"finish","job":"a"}
{"t":5,"ev":"admit","job":"b","lane":1,"lane_mib":50}
{"t":10,"ev":"iter_start","job":"b","lane":1}
{"t":12,"ev":"iter_end","job":"b","lane":1,"gpu_s":2}
{"t":12,"ev":"finish","job":"b"}
{"t":13,"ev":"finish","job":"c"}
`
	c := metrics.NewCollector()
	if err := eventlog.Read(strings.NewReader(log), "hand", func(e eventlog.Event) error { c.Emit(e); return nil }); err != nil {
		t.Fatal(err)
	}
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	slow := map[string]float64{}
	for _, j := range r.Completion {
		slow[j.ID] = j.Slowdown
	}
	if slow["a"] != 1 || slow["b"] != 2.75 || slow["c"] != 0 {
		t.Errorf("slowdowns %v, want a 1, b 2.75, c unknown (0)", slow)
	}
	if want := metrics.Jain([]float64{1, 2.75}); r.JainSlowdown != want || r.MaxSlowdown != 2.75 || r.SlowdownUnknown != 1 {
		t.Errorf("Jain %v max %v unknown %d, want %v, 2.75, 1", r.JainSlowdown, r.MaxSlowdown, r.SlowdownUnknown, want)
	}
}

// TestSlowdownOfAJobAloneIsOne simulates one job under fifo, training and
// inference: alone, it takes exactly its time alone.
func TestSlowdownOfAJobAloneIsOne(t *testing.T) {
	for _, data := range []string{
		"job_id,model,batch_size,iterations,arrival_s\nsolo,resnet50,50,300,7\n",
		"job_id,model,batch_size,iterations,arrival_s,kind,pause_s\nsolo,resnet50,1,20,3,infer,0.5\n",
	} {
		tr, err := workload.ParseTrace([]byte(data), "solo.csv", "solo", workload.Default())
		if err != nil {
			t.Fatal(err)
		}
		p, err := core.Compose("exclusive", "fifo", core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		c := metrics.NewCollector()
		if err := sim.Run(tr, sim.Options{Policy: p, Device: device.DefaultDevice(), Sink: c}); err != nil {
			t.Fatal(err)
		}
		r, err := c.Result()
		if err != nil {
			t.Fatal(err)
		}
		j := r.Completion[0]
		if j.AloneS <= 0 || math.Abs(j.Slowdown-1) > 1e-9 || r.JainSlowdown != 1 || r.MaxSlowdown != j.Slowdown {
			t.Errorf("%s: JCT %v, alone %v, slowdown %v, Jain %v: want slowdown 1 and Jain 1", tr.Jobs[0].Kind, j.JCTS, j.AloneS, j.Slowdown, r.JainSlowdown)
		}
	}
}
