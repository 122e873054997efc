// Command salus simulates, serves and evaluates fine-grained GPU sharing of
// deep-learning jobs (a Go reimplementation of Salus). It is thin: it parses flags,
// calls the packages and prints. It must hold no scheduling, simulation, metrics or
// wire-protocol logic of its own: those belong to core, sim, metrics and the daemon's
// packages, where the tests and the other engine see them.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
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
	root.AddCommand(newEvalCmd(), newSimulateCmd(), newModelsCmd(), newTraceCmd())
	for _, add := range extraCommands {
		root.AddCommand(add())
	}
	return root
}

// extraCommands lets other files of this command register subcommands.
var extraCommands []func() *cobra.Command
