package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestOverheadSuiteNeedsTheLiveEngine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--suite", "overhead"}, "--engine live"},
		{[]string{"eval", "--suite", "overhead", "--engine", "live", "--worker", "emulated"}, "--worker pytorch"},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(tc.args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("salus %s: error %v, want one that mentions %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
