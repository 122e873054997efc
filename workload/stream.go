package workload

import (
	"iter"
	"os"
	"path/filepath"
	"strings"
)

// Stream gives a trace's jobs one at a time in arrival order, so that a run holds
// the jobs alive, not the whole trace: a trace file in arrival order is read as the
// run goes (OpenTrace), a generated salus100 trace is drawn as it goes
// (GenerateStream). Name and Seed are the trace's.
type Stream struct {
	Name string
	Seed int64
	next func() (*Job, bool)
	stop func()
	err  error
}

// Next returns the next job, or false at the end of the trace or at an error (Err
// says which). A job comes once and is not changed after.
func (s *Stream) Next() (*Job, bool) { return s.next() }

// Err is the error that ended the stream early, nil at its end.
func (s *Stream) Err() error { return s.err }

// Close stops the stream before its end and frees what it holds; a stream read to
// its end needs no Close, and a second Close does nothing.
func (s *Stream) Close() {
	if s.stop != nil {
		s.stop()
	}
}

// pull makes a stream of seq, whose error, if any, it sets on the stream.
func pull(name string, seed int64, seq func(s *Stream) iter.Seq[*Job]) *Stream {
	s := &Stream{Name: name, Seed: seed}
	s.next, s.stop = iter.Pull(seq(s))
	return s
}

// Stream streams the trace's jobs, in place: the jobs given are the trace's own.
func (t *Trace) Stream() *Stream {
	i := 0
	return &Stream{Name: t.Name, Seed: t.Seed, next: func() (*Job, bool) {
		if i == len(t.Jobs) {
			return nil, false
		}
		i++
		return &t.Jobs[i-1], true
	}}
}

// OpenTrace opens a trace file as a stream. It first reads the file through,
// checking every row as ReadTraceFile does (an error there comes before any job,
// with the file, line and field) and whether the rows are in arrival order,
// keeping no job. A file in arrival order then streams: each job is read from the
// file's bytes (held whole: a few dozen bytes a row, against the job's few hundred)
// when the run asks for it. A file out of order is read whole and sorted, as
// ReadTraceFile does: the same jobs, in the same order, either way.
func OpenTrace(path string, cat *Catalog) (*Stream, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	sorted, err := checkTrace(data, path, cat)
	if err != nil {
		return nil, err
	}
	if !sorted {
		t, err := ParseTrace(data, path, name, cat)
		if err != nil {
			return nil, err
		}
		return t.Stream(), nil
	}
	return pull(name, 0, func(s *Stream) iter.Seq[*Job] {
		return func(yield func(*Job) bool) {
			stopped := false
			err := eachJob(data, path, cat, func(j Job, _ int) error {
				if stopped = !yield(&j); stopped {
					return errStopped
				}
				return nil
			})
			if err != nil && !stopped {
				s.err = err
			}
		}
	}), nil
}
