// Package salusv1connect is the connect-go code generated from salus.proto: the
// handlers package server mounts and the clients that call the daemon's API.
//
// Only this file is written by hand: regenerate the rest with `go generate ./api/...`
// and never edit it; behaviour belongs in package server, not here.
package salusv1connect
