// Package core is the scheduling state machine shared by the simulator and the daemon.
//
// A Scheduler (New) decides which jobs are admitted into which GPU lane and which job
// a lane runs at each iteration boundary. Callers feed it timestamped events (Arrive,
// Request, IterationEnd, Yield, Leave; Restore for a daemon rebuilding its sessions),
// then call Decide for the instant and act on the Decisions it returns (Admit this job
// into that lane, Start that job's iteration). The simulator (package sim) drives it
// with a virtual clock, the daemon (package server) with the wall clock.
//
// A Policy says where jobs are admitted and who runs next: its Placement (an
// interface, placement.go) decides lane admission, and its Order (an interface with
// one method, Less) orders the ready jobs of one lane. Each policy registers itself
// by name, from its own file's init, in the registry of policy.go
// (RegisterPolicyAt, Lookup, Names): the four of the paper and fcfs in
// policies.go, the others each in a file of its own (las.go, defrag.go, ...). A new
// policy is one file that registers itself. A Mode (modes.go; the built-in ones in
// modebuiltin.go, registered the same way: RegisterModeAt, LookupMode, ModeNames)
// says how the device is shared:
// Salus lanes, exclusive, MPS, time-slicing, suspend/resume. Compose runs a policy
// within a mode, which sets the policy's Sharing: what the scheduler, the simulator
// and the daemon ask (start-up on the GPU, admission in order, a quantum, swapped
// residency, per-iteration grants, and how concurrent iterations share compute).
// No engine compares a mode's name.
//
// Waiting jobs are admitted in arrival order, or, with ModeParams.Admission
// "policy", in the policy's order under an anti-starvation bound (admission.go).
// A job's Priority (a smaller number is more urgent) comes first at admission and
// at every iteration boundary.
//
// It must stay pure and deterministic: no goroutines, no clock (time.Now), no I/O,
// no randomness, no event log and no metrics. Policy logic lives only here and must
// never be copied into an engine.
package core
