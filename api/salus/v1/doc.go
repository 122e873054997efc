// Package salusv1 is the Go code generated from salus.proto, the daemon's API
// (package server serves it; the salus command's admin subcommands and clients in any
// language call it): the session calls (open, begin and end an iteration, close, heartbeat)
// and the admin calls (sessions, lanes, stats, policy, evict, drain).
//
// Only this file is written by hand: regenerate the rest with `go generate ./api/...`
// and never edit it; behaviour belongs in package server, not here.
package salusv1
