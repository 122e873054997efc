// Command salus simulates, serves and evaluates fine-grained GPU sharing of
// deep-learning jobs (a Go reimplementation of Salus). It is thin: it parses flags,
// calls the packages and prints. It must hold no scheduling, simulation, metrics or
// wire-protocol logic of its own: those belong to core, sim, metrics and the daemon's
// packages, where the tests and the other engine see them.
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "salus:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "salus",
		Short:         "Fine-grained GPU sharing for deep-learning jobs: simulate, serve, evaluate",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(suggestFlag)
	for _, c := range subcommands {
		root.AddCommand(c.mk())
	}
	return root
}

// subcommands are salus's subcommands: each registers itself in its own file
// (registerCommand, in an init function) with its place in the list.
var subcommands []struct {
	order int
	mk    func() *cobra.Command
}

// registerCommand adds a subcommand at place order (lower first).
func registerCommand(order int, mk func() *cobra.Command) {
	i := len(subcommands)
	for i > 0 && subcommands[i-1].order > order {
		i--
	}
	subcommands = slices.Insert(subcommands, i, struct {
		order int
		mk    func() *cobra.Command
	}{order, mk})
}

// suggestFlag adds "did you mean" to an unknown flag's error, naming the
// command's flags closest to it (cobra suggests commands, not flags).
func suggestFlag(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var near []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		if d := editDistance(name, f.Name); d <= max(1, len(name)/4) || strings.HasPrefix(f.Name, name) && len(name) >= 3 {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return fmt.Errorf("%s (salus %s --help lists the flags)", msg, cmd.Name())
	}
	return fmt.Errorf("%s: did you mean %s?", msg, strings.Join(near, " or "))
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
