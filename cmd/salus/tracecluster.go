package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/cluster/nodelist"
	"github.com/salusgo/salus/workload/traceimport"
	"github.com/spf13/cobra"
)

func init() { traceSubcommands = append(traceSubcommands, newTraceClusterCmd, newTraceSynthCmd) }

// newTraceClusterCmd is salus trace cluster: a trace's node list as a cluster file.
func newTraceClusterCmd() *cobra.Command {
	var (
		format, out, unknown string
		like                 map[string]string
	)
	var formats []string
	for _, f := range traceimport.NodeFormats() {
		formats = append(formats, fmt.Sprintf("  %-18s %s", f.Name, f.Summary))
	}
	cmd := &cobra.Command{
		Use:   "cluster --format FORMAT FILE",
		Short: "Convert a public trace's node list (Alibaba 2023, PAI 2020) into a cluster file",
		Long: `Read a public trace's node list, one machine a row, and write a cluster file
(salus simulate --cluster FILE): the machines grouped into shapes of the same
GPUs, GPU type, CPUs and memory, counted. Each GPU type keeps the trace's name
(V100M32, G2), declared under models: like the device preset device.Match finds
for it (V100M32: v100, T4: t4), so that a job's GPU-type constraint (the pod's
gpu_spec, the job's gpu_models) names the cluster's models. A type no preset
matches (Alibaba's undisclosed G1, G2, G3; PAI's MISC) is taken like
--unknown-like, the 32 GB V100 by default: a guess, said so in the file; --like
TYPE=PRESET sets any type's preset. Machines without GPUs are kept as shapes of
0 GPUs.

Formats:
` + strings.Join(formats, "\n"),
		Example: `  salus trace cluster --format alibaba2023-nodes openb_node_list_gpu_node.csv --out alibaba2023.yaml
  salus trace cluster --format pai2020-machines pai_machine_spec.csv --like MISC=t4 --out pai2020.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := traceimport.LookupNodes(format)
			if err != nil {
				return err
			}
			rows, err := f.Read(args[0])
			if err != nil {
				return err
			}
			shapes, models, err := nodelist.Shapes(rows, nodelist.Options{Like: like, Unknown: unknown})
			if err != nil {
				return err
			}
			var b bytes.Buffer
			header := []string{fmt.Sprintf("Cluster of %s (salus trace cluster --format %s).", args[0], f.Name)}
			if err := nodelist.WriteYAML(&b, header, shapes, models); err != nil {
				return err
			}
			// What was written must read back as a cluster.
			if _, err := cluster.ParseYAML(b.Bytes(), "the cluster file written"); err != nil {
				return err
			}
			return writeOut(cmd.OutOrStdout(), out, b.Bytes())
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "the node list's format: "+strings.Join(nodeFormatNames(), ", "))
	cmd.Flags().StringVar(&out, "out", "", "write the cluster file here (default: standard output)")
	cmd.Flags().StringVar(&unknown, "unknown-like", nodelist.DefaultUnknown, "the device preset a GPU type no preset matches is taken like")
	cmd.Flags().StringToStringVar(&like, "like", nil, "TYPE=PRESET,...: the device preset a GPU type of the trace is taken like (G2=a100)")
	cmd.MarkFlagRequired("format")
	return cmd
}

func nodeFormatNames() []string {
	var names []string
	for _, f := range traceimport.NodeFormats() {
		names = append(names, f.Name)
	}
	return names
}

// newTraceSynthCmd is salus trace synth: a made-up pod list in Alibaba 2023's
// schema, for studies where the trace itself is not at hand.
func newTraceSynthCmd() *cobra.Command {
	var (
		o   traceimport.SynthOptions
		out string
	)
	cmd := &cobra.Command{
		Use:   "synth --rows N",
		Short: "Write a synthetic pod list in Alibaba 2023's schema (openb_pod_list_*.csv): made up, not the trace",
		Long: `Write a made-up pod list in the schema of Alibaba's 2023 GPU-sharing trace,
which salus trace import --format alibaba2023 reads: pods created at random
(exponential gaps of --mean-gap seconds), running exponential times of
--mean-run seconds, one in ten without a GPU, one in twenty never scheduled,
the rest one GPU (a share of 100 to 700 milli for half of them) or 2, 4, 8
whole GPUs, each of a QoS class alike likely, its gpu_spec drawn from --specs.
It is not the trace and says nothing about it: a workload of the trace's shape
for a study of a cluster when the pod list itself is not at hand. The same
options give the same file.`,
		Example: `  salus trace synth --rows 8000 --seed 1 --mean-gap 10 --mean-run 36000 --specs ',,,,,,,V100M16|V100M32,T4,G2' --out pods.csv`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Rows < 1 {
				return fmt.Errorf("--rows %d: give how many pods to write, at least 1", o.Rows)
			}
			if o.MeanGapS < 0 || o.MeanRunS < 0 {
				return fmt.Errorf("--mean-gap %v, --mean-run %v: give positive seconds (0: the defaults)", o.MeanGapS, o.MeanRunS)
			}
			var b bytes.Buffer
			if err := traceimport.WriteSyntheticAlibaba2023(&b, o); err != nil {
				return err
			}
			return writeOut(cmd.OutOrStdout(), out, b.Bytes())
		},
	}
	cmd.Flags().IntVar(&o.Rows, "rows", 0, "how many pods")
	cmd.Flags().Uint64Var(&o.Seed, "seed", 1, "the random seed")
	cmd.Flags().Float64Var(&o.MeanGapS, "mean-gap", 0, "mean seconds between pod creations (0: 150)")
	cmd.Flags().Float64Var(&o.MeanRunS, "mean-run", 0, "mean seconds a pod runs (0: 120)")
	cmd.Flags().StringSliceVar(&o.Specs, "specs", nil, "gpu_spec values drawn alike (empty: none; default: eight in ten none, V100M16|V100M32, A100)")
	cmd.Flags().StringVar(&out, "out", "", "write the pod list here (default: standard output)")
	return cmd
}
