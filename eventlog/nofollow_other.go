//go:build !unix

package eventlog

// noFollow is not there to ask for: the journal's folder is the operator's to
// keep.
const noFollow = 0
