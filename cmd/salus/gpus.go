package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/server"
)

// addGPUsFlag is --gpus, defined here once for every command that takes a node's
// GPUs: a count N; with indices (salus serve, whose GPUs are physical devices), a
// list of device indices too, which parseGPUs reads. Commands that simulate or
// emulate the node read a count with gpuCount. what is added to the help.
func addGPUsFlag(f *pflag.FlagSet, p *string, indices bool, what string) {
	help := "GPUs of the node, each of the preset's memory and with its own lanes: a count N"
	if indices {
		help += " (GPUs 0..N-1), or physical device indices, each optionally with its memory: 0,1,3 or 0:16384,1:40960 (one index alone: 3:)"
	} else {
		help += "; a job runs on one GPU, a gang job (trace column gpus) on several at once"
	}
	f.StringVar(p, "gpus", "1", help+what)
}

// gpuCount reads a --gpus that must be a count: the GPUs of a simulated or
// emulated node, 1 to maxGPUs.
func gpuCount(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("--gpus %s: give a count of GPUs (a list of device indices is salus serve's, whose GPUs are physical)", s)
	}
	if n < 1 || n > maxGPUs {
		return 0, fmt.Errorf("--gpus %d: a node has 1 to %d GPUs", n, maxGPUs)
	}
	return n, nil
}

// parseGPUs reads salus serve's --gpus: a count N (GPUs 0..N-1, each of
// capacity MiB), or a comma-separated list of physical device indices, each
// optionally with its own capacity: "0,1,3" or "0:16384,1:40960". A single index
// is written with its colon ("3:" or "3:40960"), a bare number being a count.
func parseGPUs(s string, capacity float64) ([]server.GPU, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []server.GPU{{Index: 0, CapacityMiB: capacity}}, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > server.MaxGPUs {
			return nil, fmt.Errorf("--gpus %d: give a count between 1 and %d, or a list of device indices (0,1,3 or 0:16384,1:40960)", n, server.MaxGPUs)
		}
		gpus := make([]server.GPU, n)
		for i := range gpus {
			gpus[i] = server.GPU{Index: i, CapacityMiB: capacity}
		}
		return gpus, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > server.MaxGPUs {
		return nil, fmt.Errorf("--gpus: %d GPUs: a daemon schedules at most %d", len(parts), server.MaxGPUs)
	}
	var gpus []server.GPU
	seen := map[int]bool{}
	for _, p := range parts {
		idx, mib, hasMiB := strings.Cut(strings.TrimSpace(p), ":")
		i, err := strconv.Atoi(strings.TrimSpace(idx))
		if err != nil || i < 0 || i >= server.MaxGPUs {
			return nil, fmt.Errorf("--gpus %s: %q is not a device index: give indices between 0 and %d, each optionally with its memory in MiB (0,1,3 or 0:16384,1:40960)", s, idx, server.MaxGPUs-1)
		}
		if seen[i] {
			return nil, fmt.Errorf("--gpus %s: GPU %d is listed twice: list each GPU once", s, i)
		}
		seen[i] = true
		g := server.GPU{Index: i, CapacityMiB: capacity}
		if hasMiB && strings.TrimSpace(mib) != "" {
			c, err := strconv.ParseFloat(strings.TrimSpace(mib), 64)
			if err != nil || !(c > 0) || c > server.MaxMiB {
				return nil, fmt.Errorf("--gpus %s: GPU %d: memory %q: give its usable memory as a positive number of MiB, at most %d", s, i, mib, server.MaxMiB)
			}
			g.CapacityMiB = c
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// gpuPlacementFlag is the help of --gpu-placement.
func gpuPlacementHelp() string {
	return "how a job's GPU is chosen on a node of several (--gpus): " + strings.Join(core.GPUPlacementNames(), ", ") +
		" (least-loaded spreads jobs, first-fit fills GPU 0 first, best-fit packs the fullest GPU first)"
}

// clusterFlags are --cluster and --node-placement: a cluster of nodes to
// simulate in place of one node of --gpus GPUs (simulate, eval's training suite).
type clusterFlags struct {
	file, placement string
}

func (c *clusterFlags) register(f *pflag.FlagSet) {
	f.StringVar(&c.file, "cluster", "", "simulate a cluster of nodes, from a cluster file (YAML or CSV of node shapes: docs/traces.md#cluster-files), instead of one node of --gpus GPUs; each GPU has its node's model, memory and speed")
	f.StringVar(&c.placement, "node-placement", core.DefaultNodePlacement, "with --cluster, how a job's node is chosen: "+strings.Join(core.NodePlacementNames(), ", ")+
		" (each takes idle GPUs first when a node has enough; among them first-fit fills the first nodes first, least-loaded spreads jobs, best-fit packs the fullest node first, fgd keeps whole nodes for gangs: docs/concepts.md)")
}

// load reads --cluster; the zero Cluster when none is given. A cluster gives
// the GPUs: --gpus beside it is an error.
func (c *clusterFlags) load(fs *pflag.FlagSet) (eval.Cluster, error) {
	if _, err := core.LookupNodePlacement(c.placement); err != nil {
		return eval.Cluster{}, fmt.Errorf("--node-placement: %w", err)
	}
	if c.file == "" {
		if fs.Changed("node-placement") {
			return eval.Cluster{}, fmt.Errorf("--node-placement chooses among the nodes of --cluster: give --cluster FILE too")
		}
		return eval.Cluster{}, nil
	}
	if fs.Changed("gpus") {
		return eval.Cluster{}, fmt.Errorf("--cluster %s gives the GPUs, node by node: leave out --gpus", c.file)
	}
	cl, err := cluster.Load(c.file)
	if err != nil {
		return eval.Cluster{}, fmt.Errorf("--cluster: %w", err)
	}
	return eval.Cluster{Nodes: cl, Placement: c.placement}, nil
}

// describeCluster is one line on a cluster: its nodes, GPUs and shapes.
func describeCluster(c *cluster.Cluster) string {
	var shapes []string
	for _, s := range c.Shapes() {
		shapes = append(shapes, fmt.Sprintf("%d x %s", s.Count, s.Name))
	}
	return fmt.Sprintf("%s: %d nodes, %d GPUs (%s)", c.Source, len(c.Nodes), c.GPUCount(), strings.Join(shapes, ", "))
}
