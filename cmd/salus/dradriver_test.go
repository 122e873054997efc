package main

import (
	"strings"
	"testing"
)

// The driver refuses to start without what it cannot guess, naming the flag.
func TestDRADriverFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dra-driver", "--node-name", ""}, "--node-name is empty"},
		{[]string{"dra-driver", "--node-name", "n1", "--resync", "0s"}, "--resync 0s"},
		{[]string{"dra-driver", "--node-name", "n1", "--kubeconfig", "/nonexistent/kubeconfig"}, "give --kubeconfig outside a cluster"},
	} {
		_, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("salus %s: %v, want an error with %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
