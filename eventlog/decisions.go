package eventlog

import (
	"time"

	"github.com/salusgo/salus/core"
)

// The events of the core's decisions and of the lanes' memory, defined once for
// both engines (the simulator and the daemon). What differs between them comes in
// as a parameter: whether admitted jobs hold the GPU through start-up, the reason
// of a re-admission, the memory copied for a start, whether only one job of a lane
// is resident.

// AdmitEvent is the event of an Admit decision at now. holdsGPU: the job holds the
// whole GPU through its start-up; reason says why it was admitted again, if it was
// ("recovered": a session a restarted daemon rebuilt from its log).
func AdmitEvent(now time.Duration, d core.Decision, holdsGPU bool, reason string) Event {
	ev := Event{T: now.Seconds(), Kind: Admit, Job: d.Job, Lane: d.Lane, LaneMiB: d.LaneSize,
		HoldsGPU: holdsGPU, Reason: reason}
	if len(d.GPUs) > 0 {
		ev.GPUIndex = d.GPUs[0]
	}
	if len(d.GPUs) > 1 {
		ev.Gang = d.GPUs
	}
	return ev
}

// StartEvent is the event of a Start decision at now; copiedMiB is the memory copied
// over PCIe to make the job resident (suspend/resume), 0 otherwise.
func StartEvent(now time.Duration, d core.Decision, copiedMiB float64) Event {
	return Event{T: now.Seconds(), Kind: IterStart, Job: d.Job, Lane: d.Lane, Prev: d.Previous, CopyMiB: copiedMiB}
}

// MemoryEvent is the event of lane's memory at now, found among lanes (the core's
// lanes after the change); a lane not among them closed, and holds nothing. With
// swapped, only one job of a lane is resident at a time (suspend/resume): its
// memory is at most the biggest job's.
func MemoryEvent(now time.Duration, lanes []core.LaneInfo, lane int, swapped bool) Event {
	ev := Event{T: now.Seconds(), Kind: Memory, Lane: lane}
	for _, l := range lanes {
		if l.ID != lane {
			continue
		}
		ev.LaneMiB, ev.PersistentMiB, ev.EphemeralMiB, ev.Jobs, ev.GPUIndex = l.Size, l.Persistent, l.MaxEphemeral, l.Jobs, l.GPU
		if swapped {
			ev.PersistentMiB, ev.EphemeralMiB = l.BiggestPersistent, l.BiggestEphemeral
		}
		break
	}
	return ev
}

// IterEndEvent is the event of job's iteration in lane ending at now, after gpu of
// GPU time.
func IterEndEvent(now time.Duration, job string, lane int, gpu time.Duration) Event {
	return Event{T: now.Seconds(), Kind: IterEnd, Job: job, Lane: lane, GPU: gpu.Seconds()}
}

// ServedEvent is the event of an inference request of job served at now, latency
// after it was made.
func ServedEvent(now time.Duration, job string, latency time.Duration) Event {
	return Event{T: now.Seconds(), Kind: Served, Job: job, Latency: latency.Seconds()}
}

// EndEvent is the event of job leaving at now: Finish when it finished, otherwise
// Lost, for reason.
func EndEvent(now time.Duration, job string, finished bool, reason string) Event {
	if finished {
		return Event{T: now.Seconds(), Kind: Finish, Job: job}
	}
	return Event{T: now.Seconds(), Kind: Lost, Job: job, Reason: reason}
}

// DefragEvent is the event of a Defrag decision at now (a split or merge of
// lanes). The caller logs the memory of d.Regroup.Changed after it, in that order.
func DefragEvent(now time.Duration, d core.Decision) Event {
	ev := Event{T: now.Seconds(), Kind: Defrag, Lane: d.Lane, LaneMiB: d.LaneSize}
	if r := d.Regroup; r != nil {
		ev.Reason, ev.Jobs = r.Kind, len(r.Jobs)
	}
	if len(d.GPUs) > 0 {
		ev.GPUIndex = d.GPUs[0]
	}
	return ev
}

// MigrateEvent is the event of a Migrate decision at now: the job's new lane,
// its GPU and the memory copied to it. The caller logs the memory of the lane
// the job left (d.From) and of its new lane after it.
func MigrateEvent(now time.Duration, d core.Decision) Event {
	ev := Event{T: now.Seconds(), Kind: Migrate, Job: d.Job, Lane: d.Lane, LaneMiB: d.LaneSize, CopyMiB: d.CopyMiB}
	if len(d.GPUs) > 0 {
		ev.GPUIndex = d.GPUs[0]
	}
	return ev
}

// StretchEvent is the event of n boundaries of job in lane, the last at now,
// after gpu of GPU time in all.
func StretchEvent(now time.Duration, job string, lane, n int, gpu time.Duration) Event {
	return Event{T: now.Seconds(), Kind: Stretch, Job: job, Lane: lane, Iterations: n, GPU: gpu.Seconds()}
}

// TurnsEvent is the event of a stretch of lane's turns, the last boundary at
// now, after which job runs (Event.Turns).
func TurnsEvent(now time.Duration, job string, lane int, turns []Turn) Event {
	return Event{T: now.Seconds(), Kind: Stretch, Job: job, Lane: lane, Turns: turns}
}
