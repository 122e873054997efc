package sim

import (
	"os"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

func TestZZProfile(t *testing.T) {
	path := os.Getenv("ZZ_TRACE")
	if path == "" {
		t.Skip()
	}
	tr, err := workload.ReadTraceFile(path, workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := core.Lookup(os.Getenv("ZZ_POLICY"))
	if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice(), Sink: metrics.NewCollector()}); err != nil {
		t.Fatal(err)
	}
}
