package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
)

func init() {
	registerCommand(100, newGetCmd)
	registerCommand(101, newDescribeCmd)
}

// printAs writes msg as JSON, or as the table draw writes, by --format.
func printAs(w io.Writer, output string, msg proto.Message, draw func(*tabwriter.Writer)) error {
	switch output {
	case "json":
		b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(msg)
		if err != nil {
			return err
		}
		// protojson varies its spacing on purpose; indent it the same way every time.
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return err
		}
		out.WriteByte('\n')
		_, err = w.Write(out.Bytes())
		return err
	case "table", "":
		tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', tabwriter.AlignRight)
		draw(tw)
		return tw.Flush()
	}
	return fmt.Errorf("unknown --format %q: choose table or json", output)
}

func newGetCmd() *cobra.Command {
	var (
		a  adminFlags
		of outputFlags
	)
	cmd := &cobra.Command{
		Use:   "get sessions|lanes|claims|policy|stats",
		Short: "Show a running daemon's sessions, lanes, claims, policy or counters (admin), like kubectl get",
		Long: `Show what a running daemon holds, through its connect API (admin): its sessions, its
lanes (lane 0 and zero counts included; each GPU's memory reserved by Kubernetes claims), the
claims the DRA driver reserved (GPU, memory, the intent that binds their sessions: declared
time, priority, share; the session open under each), its policy, or its counters; -o json
(--format json) prints every field, zeros included.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"sessions", "lanes", "claims", "policy", "stats"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := of.check(); err != nil {
				return err
			}
			return a.call(cmd, func(c salusv1connect.AdminServiceClient, ctx context.Context) error {
				w := cmd.OutOrStdout()
				fail := func(err error) error { return fmt.Errorf("get %s at %s: %w", args[0], a.addr, err) }
				switch args[0] {
				case "sessions":
					return printSessions(w, c, ctx, of.format, fail)
				case "lanes":
					res, err := c.ListLanes(ctx, connect.NewRequest(&salusv1.ListLanesRequest{}))
					if err != nil {
						return fail(err)
					}
					return printAs(w, of.format, res.Msg, func(tw *tabwriter.Writer) {
						fmt.Fprintln(tw, "lane\tgpu\tsize (MiB)\tpersistent (MiB)\tmax ephemeral (MiB)\tjobs\tready\t")
						for _, l := range res.Msg.Lanes {
							fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%.0f\t%d\t%d\t\n", l.Id, gpuList(l.Gpus), l.SizeMib, l.PersistentMib, l.MaxEphemeralMib, l.Jobs, l.Ready)
						}
						// Lines without a tab end the table's columns: they do not widen them.
						fmt.Fprintf(tw, "capacity %.0f MiB, free %.0f MiB\n", res.Msg.CapacityMib, res.Msg.FreeMib)
						for _, g := range res.Msg.Gpus {
							fmt.Fprintf(tw, "gpu %d: capacity %.0f MiB, free %.0f MiB, %d lanes, %d jobs, %.0f MiB reserved by claims\n", g.Index, g.CapacityMib, g.FreeMib, g.Lanes, g.Jobs, g.ClaimedMib)
						}
					})
				case "claims":
					return printClaims(w, c, ctx, of.format, fail)
				case "policy":
					res, err := c.GetPolicy(ctx, connect.NewRequest(&salusv1.GetPolicyRequest{}))
					if err != nil {
						return fail(err)
					}
					return printAs(w, of.format, res.Msg, func(tw *tabwriter.Writer) {
						p := res.Msg
						fmt.Fprintf(tw, "policy\t%s\t\ndescription\t%s\t\nstart-up on the GPU\t%v\t\ncapacity (MiB)\t%.0f\t\navailable\t%v\t\ngpus\t%d\t\ngpu placement\t%s\t\n",
							p.Name, p.Description, p.StartupOnGpu, p.CapacityMib, p.Available, p.Gpus, p.GpuPlacement)
					})
				case "stats":
					res, err := c.GetStats(ctx, connect.NewRequest(&salusv1.GetStatsRequest{}))
					if err != nil {
						return fail(err)
					}
					return printAs(w, of.format, res.Msg, func(tw *tabwriter.Writer) {
						s := res.Msg
						fmt.Fprintf(tw, "uptime (s)\t%.1f\t\nsessions\t%d\t\nwaiting\t%d\t\niterations\t%d\t\nfinished\t%d\t\nlost\t%d\t\nswitches\t%d\t\ndraining\t%v\t\n",
							s.UptimeS, s.Sessions, s.Waiting, s.Iterations, s.Finished, s.Lost, s.Switches, s.Draining)
						fmt.Fprintf(tw, "journal\t%s\t\njournal write errors\t%d\t\njournal unwritten (bytes)\t%d\t\njournal dropped events\t%d\t\njournal rotations\t%d\t\n",
							cmp.Or(s.Journal, "unknown"), s.JournalWriteErrors, s.JournalUnwrittenBytes, s.JournalDroppedEvents, s.JournalRotations)
						if s.JournalError != "" {
							// Without a tab: a long error does not widen the table.
							fmt.Fprintf(tw, "journal error: %s\n", s.JournalError)
						}
					})
				}
				return fmt.Errorf("get %q: choose sessions, lanes, claims, policy or stats", args[0])
			})
		},
	}
	a.register(cmd)
	registerGetOutput(cmd, &of)
	return cmd
}

// registerGetOutput is get's and describe's --format (-o, like kubectl), with
// --output, its name before, kept as a deprecated alias.
func registerGetOutput(cmd *cobra.Command, of *outputFlags) {
	of.register(cmd, "o", "table", "json")
	deprecatedAlias(cmd.Flags(), &of.format, "output", "", "format")
}

func newDescribeCmd() *cobra.Command {
	var (
		a  adminFlags
		of outputFlags
	)
	cmd := &cobra.Command{
		Use:   "describe JOB",
		Short: "Show one session of a running daemon in full (admin), like kubectl describe",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := of.check(); err != nil {
				return err
			}
			return a.call(cmd, func(c salusv1connect.AdminServiceClient, ctx context.Context) error {
				res, err := c.ListSessions(ctx, connect.NewRequest(&salusv1.ListSessionsRequest{}))
				if err != nil {
					return fmt.Errorf("describe %q at %s: %w", args[0], a.addr, err)
				}
				for _, s := range res.Msg.Sessions {
					if s.Job != args[0] {
						continue
					}
					return printAs(cmd.OutOrStdout(), of.format, s, func(tw *tabwriter.Writer) {
						fmt.Fprintf(tw, "job\t%s\t\nmodel\t%s\t\nstate\t%s\t\nlane\t%d\t\narrival (s since the daemon's start)\t%.3f\t\n"+
							"iterations\t%d\t\nattained GPU time (s)\t%.3f\t\ndeclared GPU time (s)\t%.3f\t\npersistent (MiB)\t%.0f\t\n"+
							"ephemeral (MiB)\t%.0f\t\ntransport\t%s\t\nowner\t%s\t\ngpus\t%s\t\n",
							s.Job, s.Model, s.State, s.Lane, s.ArrivalS, s.Iterations, s.AttainedS, s.DeclaredS, s.PersistentMib,
							s.EphemeralMib, s.Transport, s.Owner, gpuList(s.Gpus))
					})
				}
				return fmt.Errorf("describe %q: the daemon at %s has no session of that job (salus get sessions lists them)", args[0], a.addr)
			})
		},
	}
	a.register(cmd)
	registerGetOutput(cmd, &of)
	return cmd
}

// printSessions lists the daemon's sessions, for salus get sessions and its
// shorthand salus sessions.
func printSessions(w io.Writer, c salusv1connect.AdminServiceClient, ctx context.Context, format string, fail func(error) error) error {
	res, err := c.ListSessions(ctx, connect.NewRequest(&salusv1.ListSessionsRequest{}))
	if err != nil {
		return fail(err)
	}
	return printAs(w, format, res.Msg, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "job\tstate\tlane\tgpu\titerations\tattained (s)\tdeclared (s)\tpersistent (MiB)\tephemeral (MiB)\ttransport\towner\t")
		for _, s := range res.Msg.Sessions {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%.1f\t%.1f\t%.0f\t%.0f\t%s\t%s\t\n", s.Job, s.State, s.Lane, gpuList(s.Gpus), s.Iterations,
				s.AttainedS, s.DeclaredS, s.PersistentMib, s.EphemeralMib, s.Transport, s.Owner)
		}
	})
}

// printClaims lists the daemon's reserved claims.
func printClaims(w io.Writer, c salusv1connect.AdminServiceClient, ctx context.Context, format string, fail func(error) error) error {
	res, err := c.ListClaims(ctx, connect.NewRequest(&salusv1.ListClaimsRequest{}))
	if err != nil {
		return fail(err)
	}
	return printAs(w, format, res.Msg, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "claim	name	gpu	memory (MiB)	declared (s)	priority	share	session	")
		for _, c := range res.Msg.Claims {
			// "-": the claim does not bind it; the client's is used.
			declared, priority := "-", "-"
			if c.DeclaredS > 0 {
				declared = strconv.FormatFloat(c.DeclaredS, 'f', 1, 64)
			}
			if c.Priority != nil {
				priority = strconv.Itoa(int(*c.Priority))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%.3g\t%s\t\n", c.Claim, cmp.Or(c.Name, "-"), c.Gpu, c.MemoryMib, declared, priority, c.Share, cmp.Or(c.Session, "-"))
		}
	})
}

// gpuList shows GPU indices: "1", "0,1" for a gang; "-" for none (a job
// waiting for admission, or a daemon that does not say).
func gpuList(gpus []int32) string {
	if len(gpus) == 0 {
		return "-"
	}
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = strconv.Itoa(int(g))
	}
	return strings.Join(parts, ",")
}
