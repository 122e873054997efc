package main

import (
	"os"

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/report"
	"github.com/salusgo/salus/workload"
)

// writeReport draws the plots of eval's results and writes DIR/index.html; trace is
// the trace the training suite replayed (nil: no training runs).
func writeReport(dir string, results eval.Result, trace *workload.Trace) error {
	_, err := report.Write(report.Options{Dir: dir, Results: results, Trace: trace, Args: append([]string{"salus"}, os.Args[1:]...),
		Version: moduleVersion()})
	return err
}
