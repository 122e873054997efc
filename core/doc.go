// Package core is the scheduling state machine shared by the simulator and the daemon.
//
// It decides which jobs are admitted into which GPU lane and which job a lane runs at
// each iteration boundary. It is pure and deterministic: no goroutines, no clock, no
// I/O, no randomness. Callers feed it timestamped events (a job arrived, asks for an
// iteration, ended an iteration, left) and act on the decisions it returns (admit this
// job into that lane, start that job's iteration). The simulator drives it with a
// virtual clock, the daemon with the wall clock; policy logic must never be copied
// into either engine.
//
// Policies are small: a Placement decides lane admission and an Order decides, among
// the ready jobs of one lane, who runs next. A new policy is one file and one line in
// the registry (policies.go).
package core
