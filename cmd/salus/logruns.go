package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/salusgo/salus/eventlog"
)

// logRuns counts the runs of a log: the run headers that begin one
// (eventlog.BeginsRun), and events before the first of them as a run of their
// own. A daemon's restart on its log continues its run and is not counted.
func logRuns(path string) (int, error) {
	runs, seen := 0, false
	err := eventlog.ReadFile(path, func(e eventlog.Event) error {
		if eventlog.BeginsRun(e) && (runs > 0 || seen) || runs == 0 && !seen {
			runs++
		}
		seen = true
		return nil
	})
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		return 0, err
	}
	return runs, nil
}

// splitRuns writes each run of a log that holds several to a log of its own in
// dir, NAME.runK.jsonl (K from 1), its times from its own run header (a run
// begins at 0 s, as a log of one run does), and returns their paths.
func splitRuns(path, dir string, runs int) ([]string, error) {
	base := strings.TrimSuffix(filepath.Base(path), ".gz")
	base = strings.TrimSuffix(base, filepath.Ext(base))
	paths := make([]string, runs)
	files := make([]*os.File, runs)
	writers := make([]*eventlog.Writer, runs)
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	for k := range runs {
		paths[k] = filepath.Join(dir, fmt.Sprintf("%s.run%d.jsonl", base, k+1))
		f, err := os.Create(paths[k])
		if err != nil {
			return nil, err
		}
		files[k], writers[k] = f, eventlog.NewWriter(f)
	}
	k, seen, t0 := -1, false, 0.0
	err := eventlog.ReadFile(path, func(e eventlog.Event) error {
		if eventlog.BeginsRun(e) && (k >= 0 || seen) || k < 0 {
			k++
			if e.Kind == eventlog.Run {
				t0 = e.T
			}
		}
		seen = true
		if k >= runs {
			return fmt.Errorf("%s changed while it was read: give a log no daemon is writing", path)
		}
		e.T -= t0
		for i := range e.Turns {
			if e.Turns[i].EndS > 0 {
				e.Turns[i].EndS -= t0
			}
		}
		for i := range e.Open {
			e.Open[i].ArrivalS -= t0
		}
		writers[k].Emit(e)
		return nil
	})
	if err != nil && !errors.Is(err, eventlog.ErrTruncated) {
		return nil, err
	}
	for k, w := range writers {
		if err := w.Flush(); err != nil {
			return nil, err
		}
		if err := files[k].Close(); err != nil {
			return nil, err
		}
		files[k] = nil
	}
	return paths, nil
}
