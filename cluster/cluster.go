// Package cluster describes a cluster of nodes, each with its own GPUs (model,
// memory, speed) and, optionally, CPUs and host memory: what a public trace's
// jobs ran on. A cluster is read from a file of node shapes (YAML or CSV: how
// many nodes of each shape) or built from one node of identical GPUs (--gpus N,
// Single). GPUs are numbered across the cluster, node by node, so that the
// simulator's GPU index and the event log's gpu field name one GPU of one node:
// NodeOf maps it back.
//
// It is plain data: placement across nodes is the scheduling core's
// (core.NodePlacement), the device figures are device's presets.
package cluster

import (
	"fmt"
	"slices"

	"github.com/salusgo/salus/device"
)

// Cluster is the nodes, in file order, with the GPU models they name.
type Cluster struct {
	// Source names where the cluster came from: a file, or "--gpus 8".
	Source string
	// Nodes, in order; GPUs are numbered across them in this order.
	Nodes []Node
	// first[i] is the global index of node i's first GPU; first[len(Nodes)] the total.
	first []int
}

// Node is one machine.
type Node struct {
	// Name is the node's own name (from a node list) or shape-k.
	Name string
	// Shape is the name of the shape the node came from ("8xV100").
	Shape string
	// Model is the GPU model as the cluster file names it ("v100-32g", "G1").
	Model string
	// Device is each of the node's GPUs; Device.GPUs is how many there are (0:
	// none; a CPU-only node takes no GPU job).
	Device device.Device
	// CPUs and MemoryMiB are the host's, 0 when unknown.
	CPUs      float64
	MemoryMiB float64
}

// GPUs is how many GPUs the node has.
func (n Node) GPUs() int { return n.Device.GPUs }

// New returns a cluster of nodes, numbering their GPUs.
func New(source string, nodes []Node) *Cluster {
	c := &Cluster{Source: source, Nodes: nodes}
	c.index()
	return c
}

func (c *Cluster) index() {
	c.first = make([]int, len(c.Nodes)+1)
	for i, n := range c.Nodes {
		c.first[i+1] = c.first[i] + n.GPUs()
	}
}

// Single is one node of n GPUs of device d: what --gpus N means.
func Single(n int, d device.Device) *Cluster {
	d.GPUs = n
	return New(fmt.Sprintf("--gpus %d", n), []Node{{Name: "node-0", Shape: fmt.Sprintf("%dx%s", n, d.Name), Model: d.Name, Device: d}})
}

// GPUCount is how many GPUs the cluster has.
func (c *Cluster) GPUCount() int {
	if c.first == nil {
		c.index()
	}
	return c.first[len(c.Nodes)]
}

// FirstGPU is the global index of node i's first GPU.
func (c *Cluster) FirstGPU(node int) int {
	if c.first == nil {
		c.index()
	}
	return c.first[node]
}

// NodeOf is the node that global GPU g is on, and g's index within the node.
func (c *Cluster) NodeOf(g int) (node, local int) {
	if c.first == nil {
		c.index()
	}
	node, found := slices.BinarySearch(c.first, g)
	if !found {
		node--
	}
	for node+1 < len(c.first)-1 && c.first[node+1] == g { // skip nodes without GPUs
		node++
	}
	return node, g - c.first[node]
}

// Device is the device of global GPU g.
func (c *Cluster) Device(g int) device.Device {
	n, _ := c.NodeOf(g)
	return c.Nodes[n].Device
}

// MaxNodeGPUs is the GPU count of the largest node: no job may need more.
func (c *Cluster) MaxNodeGPUs() int {
	m := 0
	for _, n := range c.Nodes {
		m = max(m, n.GPUs())
	}
	return m
}

// Models lists the GPU models of the cluster, in the order nodes first name them.
func (c *Cluster) Models() []string {
	var ms []string
	for _, n := range c.Nodes {
		if n.GPUs() > 0 && !slices.Contains(ms, n.Model) {
			ms = append(ms, n.Model)
		}
	}
	return ms
}

// Shape is a count of identical nodes, as a cluster file lists them.
type Shape struct {
	Name      string
	Count     int
	GPUs      int
	Model     string
	CPUs      float64
	MemoryMiB float64
}

// Shapes groups the nodes by shape, in the order they first appear.
func (c *Cluster) Shapes() []Shape {
	var out []Shape
	at := map[string]int{}
	for _, n := range c.Nodes {
		if i, ok := at[n.Shape]; ok {
			out[i].Count++
			continue
		}
		at[n.Shape] = len(out)
		out = append(out, Shape{Name: n.Shape, Count: 1, GPUs: n.GPUs(), Model: n.Model, CPUs: n.CPUs, MemoryMiB: n.MemoryMiB})
	}
	return out
}
