package core

// FIFO is the baseline without sharing: one job at a time, in arrival order, holding
// the whole GPU from the start of its start-up to its last iteration.
// Salus's four policies, first in every list, and fcfs.
func init() {
	RegisterPolicyAt(0, FIFO)
	RegisterPolicyAt(1, SRTF)
	RegisterPolicyAt(2, Pack)
	RegisterPolicyAt(3, Fair)
	RegisterPolicyAt(10, FCFS)
}

func FIFO() Policy {
	return Policy{
		Name:        "fifo",
		Description: "no sharing: one job at a time in arrival order (plain TensorFlow)",
		Mode:        "exclusive",
		Placement:   Exclusive{},
		Order:       ByArrival{},
	}
}

// SRTF runs, at every iteration boundary of its one lane, the ready job with the
// least remaining declared time.
func SRTF() Policy {
	return Policy{
		Name:         "srtf",
		Description:  "one lane; shortest remaining declared GPU time first at every iteration boundary",
		Mode:         "salus",
		Placement:    OneLane{},
		Order:        ByRemaining{},
		UsesDeclared: true,
	}
}

// Pack admits as many jobs as memory allows into Salus lanes; within a lane,
// iteration requests are served in the order they were made.
func Pack() Policy {
	return Policy{
		Name:        "pack",
		Description: "Salus lanes, run side by side; requests served in order within a lane",
		Mode:        "salus",
		Placement:   SalusLanes{},
		Order:       ByRequest{},
	}
}

// Fair runs, at every iteration boundary of its one lane, the ready job that has
// received the least GPU time.
func Fair() Policy {
	return Policy{
		Name:        "fair",
		Description: "one lane; least attained GPU time first at every iteration boundary",
		Mode:        "salus",
		Placement:   OneLane{},
		Order:       ByAttained{},
	}
}

// FCFS serves iteration requests in the order they were made, in one lane: the
// natural order for inference jobs whose requests come and go.
func FCFS() Policy {
	return Policy{
		Name:        "fcfs",
		Description: "one lane; iteration requests served in the order made (inference serving)",
		Mode:        "salus",
		Placement:   OneLane{},
		Order:       ByRequest{},
	}
}
