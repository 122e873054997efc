package core

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// GPUInfo is a read-only view of one GPU of the node, given to a GPUPlacement:
// its Lanes are the scheduler's own, never to be modified or kept.
type GPUInfo struct {
	Index    int
	Capacity float64 // usable memory, MiB
	Free     float64 // memory no lane holds, MiB
	Lanes    []LaneInfo
	Jobs     int // admitted jobs with a lane on this GPU
	// Work is the GPU time the admitted jobs of its lanes have left (declared
	// less attained), given to a placement that orders GPUs by Order (not to
	// the built-ins that a node's index orders: gpuindex.go).
	Work time.Duration
}

// GPUPlacement is the node-level half of placement: it orders the GPUs a job may
// go to. The scheduler then asks the policy's lane Placement about each GPU in that
// order, and the first that takes the job wins. A job needing k GPUs (a gang) gets
// a lane of its own on each of the first k GPUs in the order that have room.
type GPUPlacement interface {
	Name() string
	// Order returns the indices of gpus, best first. It must return each index once.
	Order(j Job, gpus []GPUInfo) []int
}

// FirstFit tries the GPUs in index order: it fills GPU 0 before GPU 1.
type FirstFit struct{}

// Name is "first-fit".
func (FirstFit) Name() string { return "first-fit" }

// Order is the index order.
func (FirstFit) Order(_ Job, gpus []GPUInfo) []int { return sortedBy(gpus, nil) }

// LeastLoaded tries the GPU with the fewest jobs first, then the one with the most
// free memory: it spreads jobs, so that compute-heavy jobs do not slow each other
// while another GPU idles. It is the default.
type LeastLoaded struct{}

// Name is "least-loaded".
func (LeastLoaded) Name() string { return "least-loaded" }

// Order is by jobs, then free memory (most first), then index.
func (LeastLoaded) Order(_ Job, gpus []GPUInfo) []int {
	return sortedBy(gpus, func(a, b GPUInfo) int {
		if a.Jobs != b.Jobs {
			return a.Jobs - b.Jobs
		}
		return compareFloat(b.Free, a.Free)
	})
}

// BestFit tries the GPU with the least room left first (Room: among those with
// some jobs, before the empty ones): it packs jobs tightly and keeps whole GPUs
// free for big or gang jobs.
type BestFit struct{}

// Name is "best-fit".
func (BestFit) Name() string { return "best-fit" }

// Order is by room left, least first, then index.
func (BestFit) Order(_ Job, gpus []GPUInfo) []int {
	return sortedBy(gpus, func(a, b GPUInfo) int { return compareFloat(a.Room(), b.Room()) })
}

// Room is the memory of the GPU that a job could still go into: what no lane
// holds, plus what the open lanes' jobs leave of their lanes (a gang's lane,
// closed, leaves none). Under a one-lane policy the lane holds the whole GPU,
// so Free is 0 on every GPU in use and says nothing of how full it is; Room
// does, as under lanes side by side.
func (g GPUInfo) Room() float64 {
	room := g.Free
	for _, l := range g.Lanes {
		if !l.Closed {
			room += max(l.Size-l.Used(), 0)
		}
	}
	return room
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortedBy returns the indices of gpus sorted by cmp, ties (and a nil cmp) by index.
func sortedBy(gpus []GPUInfo, cmp func(a, b GPUInfo) int) []int {
	order := make([]int, len(gpus))
	for i := range gpus {
		order[i] = i
	}
	if cmp != nil {
		sort.SliceStable(order, func(x, y int) bool { return cmp(gpus[order[x]], gpus[order[y]]) < 0 })
	}
	for i, k := range order {
		order[i] = gpus[k].Index
	}
	return order
}

var gpuPlacements = map[string]GPUPlacement{
	"first-fit":    FirstFit{},
	"least-loaded": LeastLoaded{},
	"best-fit":     BestFit{},
}

// DefaultGPUPlacement is the GPU placement used when none is named.
const DefaultGPUPlacement = "least-loaded"

// GPUPlacementNames lists the registered GPU placements.
func GPUPlacementNames() []string { return slices.Sorted(maps.Keys(gpuPlacements)) }

// LookupGPUPlacement returns the named GPU placement ("" is the default).
func LookupGPUPlacement(name string) (GPUPlacement, error) {
	if name == "" {
		name = DefaultGPUPlacement
	}
	p, ok := gpuPlacements[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown GPU placement %q: choose one of %s", name, strings.Join(GPUPlacementNames(), ", "))
	}
	return p, nil
}

// Devices describes the GPUs of one node for NewNode.
type Devices struct {
	// Capacities is each GPU's usable memory, MiB, by index. It must not be empty.
	Capacities []float64
	// Placement orders the GPUs of a node for a job; nil: LeastLoaded.
	Placement GPUPlacement
	// Nodes, when not empty, groups the GPUs into the nodes of a cluster, in
	// order: node i's GPUs follow node i-1's. Empty: one node of every GPU.
	Nodes []Node
	// NodePlacement orders the nodes for a job; nil: FirstFitNode.
	NodePlacement NodePlacement
}

// Uniform returns n GPUs of capacity MiB each, with the default placement.
func Uniform(n int, capacity float64) Devices {
	caps := make([]float64, n)
	for i := range caps {
		caps[i] = capacity
	}
	return Devices{Capacities: caps}
}
