//go:build !unix

package main

import (
	"log/slog"
	"os"
)

// lockJournal does nothing where flock is not: one daemon per journal is then the
// operator's to keep.
func lockJournal(path string) ([]*os.File, string, error) { return nil, path, nil }

// warnReadable has no modes to look at here.
func warnReadable(string, *slog.Logger) {}
