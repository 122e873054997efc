package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/salusgo/salus/replay"
	"github.com/salusgo/salus/workload"
)

func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worker --job NAME (--model MODEL [--batch N] | --iter-s S --persistent-mib P --ephemeral-mib E) [flags]",
		Short: "Run an emulated training job against a salus daemon (no GPU needed)",
		Long: `Run an emulated training job: it opens a session on the daemon, does its start-up
(after admission when the policy holds the GPU through start-up, as fifo does), and runs its
iterations, each taking the profile's time scaled by --time-scale (or --iter-s), asking the
daemon before each one. Run "salus worker -h" for the flags.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a == "-h" || a == "--help" || a == "-help" {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\n\n%s", cmd.Long, replay.WorkerUsage())
					return nil
				}
			}
			w, err := replay.ParseWorker(args, workload.Default())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return w.Run(ctx)
		},
	}
}
