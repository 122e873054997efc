package live

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestMeasureOverhead: the probe reports a worker's round trip and the daemon's
// reply delay, both positive and below a few milliseconds on any machine that can
// run the live engine, and quickly.
func TestMeasureOverhead(t *testing.T) {
	t0 := time.Now()
	o, err := MeasureOverhead(context.Background(), Options{Exe: os.Args[0], Env: []string{workerEnv}})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	t.Logf("round trip %v, reply delay %v, shortest faithful iteration %v; measured in %v", o.RoundTrip, o.ReplyDelay, o.MinIteration(), took)
	if o.RoundTrip <= 0 || o.RoundTrip > 5*time.Millisecond || o.ReplyDelay < 0 || o.ReplyDelay > 10*time.Millisecond {
		t.Errorf("overhead %+v", o)
	}
	if took > 5*time.Second {
		t.Errorf("the probe took %v; it should take well under a second", took)
	}
}
