package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/salusgo/salus/eval"
	"github.com/spf13/pflag"
)

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return fmt.Errorf("unknown --format %q: choose %s", format, strings.Join(allowed, ", "))
}

// createOut creates the output directory, refusing a path that is a file and,
// unless reuse, a folder that holds other files than a salus run's results
// (checkResultsDir); it marks the folder as a results folder.
func createOut(dir string, reuse bool) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("--out %s is a file, not a directory", dir)
	case err == nil && !reuse:
		if err := checkResultsDir(dir); err != nil {
			return err
		}
	case err != nil && !os.IsNotExist(err):
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, resultsMarker), []byte("A salus run wrote its results here: a later one may write here again.\n"), 0o644)
}

// resultsMarker is the file createOut leaves in a results folder, by which a
// later run knows the folder for one of its own.
const resultsMarker = ".salus-results"

// checkResultsDir refuses a folder that holds anything but a salus run's
// results (it is empty, or createOut marked it), naming what is there: a
// results folder given by mistake as a source folder (the README's "--out
// sweep" in a checkout, whose sweep/ is a Go package) must not be written into.
func checkResultsDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, resultsMarker)); err == nil {
		return nil
	}
	var names []string
	for _, e := range entries[:min(len(entries), 4)] {
		names = append(names, e.Name())
	}
	if len(entries) > 4 {
		names = append(names, fmt.Sprintf("and %d more", len(entries)-4))
	}
	return fmt.Errorf("--out %s holds files no salus run wrote there (%s): give a new or empty folder (results/ is ignored by git), or add --reuse-out to write into it anyway", dir, strings.Join(names, ", "))
}

// addReuseOutFlag is --reuse-out, which lets createOut write into a folder
// that holds other files.
func addReuseOutFlag(f *pflag.FlagSet, p *bool) {
	f.BoolVar(p, "reuse-out", false, "write into --out even though it holds files no salus run wrote there")
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
