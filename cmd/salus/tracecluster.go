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

func init() { traceSubcommands = append(traceSubcommands, newTraceClusterCmd) }

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
		Example: `  salus trace cluster --format alibaba2023-nodes openb_node_list_gpu_node.csv -o alibaba2023.yaml
  salus trace cluster --format pai2020-machines pai_machine_spec.csv --like MISC=t4 -o pai2020.yaml`,
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
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the cluster file here (default: standard output)")
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
