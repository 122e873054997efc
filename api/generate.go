// Package api holds the protobuf definition of the daemon's API (salus/v1/salus.proto)
// and the Go code generated from it. It contains no hand-written logic.
//
// Regenerate with `go generate ./api/...`: buf compiles the .proto itself and runs
// protoc-gen-go and protoc-gen-connect-go at the versions pinned in go.mod, so only
// the Go module proxy is needed (no protoc binary).
package api

//go:generate go run github.com/bufbuild/buf/cmd/buf@v1.75.0 generate
