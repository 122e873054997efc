package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/salusgo/salus/live"
	"github.com/salusgo/salus/workload"
)

func newWorkerCmd() *cobra.Command {
	var wf live.WorkerFlags
	cmd := &cobra.Command{
		Use:   "worker --job NAME (--model MODEL [--batch N] | --iter-s S --demand D --persistent-mib P --ephemeral-mib E) [flags]",
		Short: "Run an emulated training job against a salus daemon (no GPU needed)",
		Long: `Run an emulated training job: it opens a session on the daemon, does its start-up
(after admission when the policy holds the GPU through start-up, as fifo does), and runs its
iterations, asking the daemon before each one. It sends the daemon its iteration time
(the profile's, scaled by --time-scale, or --iter-s) and compute demand (the profile's, or
--demand). When the daemon emulates the GPU (salus serve --emulate; salus replay's daemon
always does) the worker spends no time itself: it ends each iteration as soon as it begins,
and the daemon answers when its device model has done the work, slowed by whatever runs
beside it. Otherwise each iteration sleeps its iteration time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := wf.Worker(workload.Default())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return w.Run(ctx)
		},
	}
	wf.Register(cmd.Flags())
	return cmd
}
