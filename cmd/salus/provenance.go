package main

import (
	"fmt"
	"strconv"

	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandLine is the command line as salus parsed it: "salus", the command's
// path, the flags given (each repeated value as its own --flag=value) and the
// arguments. It is what results record as their command: the same whether salus
// runs from a shell or a test.
func commandLine(cmd *cobra.Command, args []string) []string {
	line := []string{cmd.Root().Name()}
	for c := cmd; c != cmd.Root(); c = c.Parent() {
		line = append(line[:1], append([]string{c.Name()}, line[1:]...)...)
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				line = append(line, "--"+f.Name+"="+v)
			}
			return
		}
		line = append(line, "--"+f.Name+"="+f.Value.String())
	})
	return append(line, args...)
}

// traceProvenance is the entry of the trace tf gives: a file by the sha256 of
// its bytes, a generated trace by that of its canonical CSV, with the salus
// trace gen command that writes it.
func traceProvenance(tf traceFlags, t *workload.Trace) (provenance.Trace, error) {
	if tf.file != "" {
		return provenance.File(tf.file)
	}
	gen := fmt.Sprintf("salus trace gen --kind %s --seed %d --jobs %d --load %s", tf.kind, tf.seed, len(t.Jobs),
		strconv.FormatFloat(tf.load, 'g', -1, 64))
	return provenance.Generated(t, gen)
}
