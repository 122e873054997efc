package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/salusgo/salus/eval"
)

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return fmt.Errorf("unknown --format %q: choose %s", format, strings.Join(allowed, ", "))
}

// createOut creates the output directory, refusing a path that is a file.
func createOut(dir string) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("--out %s is a file, not a directory", dir)
	}
	return os.MkdirAll(dir, 0o755)
}

// printReport prints a suite's report in the chosen format.
func printReport(w io.Writer, rep eval.Output, format string) error {
	switch format {
	case "json":
		return rep.JSON(w)
	case "csv":
		return rep.CSV(w)
	case "wide":
		if wo, ok := rep.(eval.WideOutput); ok {
			return wo.WideTable(w)
		}
	}
	return rep.Table(w)
}
