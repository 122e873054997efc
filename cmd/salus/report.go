package main

import (
	"os"

	"github.com/salusgo/salus/report"
	"github.com/salusgo/salus/workload"
)

// writeReport draws the plots of eval's results and writes DIR/index.html.
func writeReport(dir string, results any, trace *workload.Trace) error {
	_, err := report.Write(report.Options{Dir: dir, Results: results, Trace: trace, Args: append([]string{"salus"}, os.Args[1:]...),
		Version: moduleVersion()})
	return err
}

// reportTrace is the trace the training suite replayed, for the report's trace
// summary; nil when the suite has no training runs.
func (ef *evalFlags) reportTrace() *workload.Trace {
	if ef.suite != "training" && ef.suite != "all" {
		return nil
	}
	t, err := ef.tf.trace()
	if err != nil {
		return nil
	}
	return t
}
