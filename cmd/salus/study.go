package main

import (
	"fmt"
	"strings"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
)

func init() { registerCommand(65, newStudyCmd) }

// newStudyCmd is salus study: a trace replayed on its cluster, every policy.
func newStudyCmd() *cobra.Command {
	var (
		of                      outputFlags
		clusterFile, trace, out string
		placement               string
		policies                []string
		catalogs                []string
		coLocation              string
	)
	cmd := &cobra.Command{
		Use:   "study --cluster FILE --trace FILE",
		Short: "A trace on a cluster of nodes under exclusive GPUs and each policy: utilization, allocation, fragmentation, queueing",
		Long: `Simulate a trace on a cluster (a cluster file: salus trace cluster, or
examples/clusters/alibaba2023.yaml) under exclusive GPUs and then each policy
in Salus's mode, and report for each run, per node shape and per GPU model:
the utilization (busy GPU time over GPU time), the allocation rate (allocated
GPU time over GPU time: the shares of the jobs admitted on a GPU, at most 1)
and FGD's fragmentation rate (fragmented over unallocated GPU time, against the
trace's own mix of jobs); the queueing delay per priority class beside the
trace's own (trace_queue_s); and each job's simulated JCT over its run in the
trace (trace_run_s). Import the trace with salus trace import --cluster FILE so
that its jobs are timed on, and constrained to, the cluster's models.`,
		Example: `  salus trace import --format alibaba2023 openb_pod_list_default.csv --cluster examples/clusters/alibaba2023.yaml --out openb.csv
  salus study --cluster examples/clusters/alibaba2023.yaml --trace openb.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := of.check(); err != nil {
				return err
			}
			if clusterFile == "" || trace == "" {
				return fmt.Errorf("give the cluster (--cluster FILE) and the trace (--trace FILE)")
			}
			c, err := cluster.Load(clusterFile)
			if err != nil {
				return err
			}
			cat, err := loadCatalog(catalogs)
			if err != nil {
				return err
			}
			t, err := workload.ReadTraceFile(trace, cat)
			if err != nil {
				return err
			}
			im, err := loadInterference(coLocation)
			if err != nil {
				return err
			}
			r, err := eval.ClusterStudy(c, clusterFile, t, eval.StudyOptions{Policies: policies, NodePlacement: placement, Modes: core.DefaultModeParams(), Interference: im})
			if err != nil {
				return err
			}
			var b strings.Builder
			switch of.format {
			case "json":
				err = r.JSON(&b)
			case "csv":
				err = r.CSV(&b)
			default:
				err = r.Table(&b)
			}
			if err != nil {
				return err
			}
			return writeOut(cmd.OutOrStdout(), out, []byte(b.String()))
		},
	}
	of.register(cmd, "o", "table", "json", "csv")
	cmd.Flags().StringVar(&clusterFile, "cluster", "", "the cluster file (salus trace cluster)")
	cmd.Flags().StringVar(&trace, "trace", "", "the trace (CSV or JSON Lines)")
	cmd.Flags().StringVar(&out, "out", "", "write the report here (default: standard output)")
	cmd.Flags().StringVar(&placement, "node-placement", "", "how a job's node is chosen: "+strings.Join(core.NodePlacementNames(), ", ")+" (default: the core's)")
	cmd.Flags().StringSliceVar(&policies, "policy", eval.StudyPolicies, "the policies run in Salus's mode, after exclusive GPUs, comma-separated or repeated")
	// --policies was this command's name for --policy alone among the commands:
	// kept, hidden, for the scripts that use it.
	cmd.Flags().StringSliceVar(&policies, "policies", eval.StudyPolicies, "deprecated: use --policy")
	_ = cmd.Flags().MarkDeprecated("policies", "use --policy")
	addCatalogFlag(cmd, &catalogs)
	addInterferenceFlag(cmd.Flags(), &coLocation)
	return cmd
}
