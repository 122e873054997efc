// Package protocol is the salus fast path's wire format (docs/protocol.md): the
// frame (a 4-byte big-endian length, then one JSON object), its limits and
// version, the requests and replies, and every error code the daemon answers
// with. The daemon (package server), the Go client (package client) and, through
// a file generated from this package, the Python client all take them from here.
//
// It is the reference for what goes on the wire and nothing more: it must not
// hold sessions, connections, deadlines, scheduling or policy, and it imports
// nothing of the project.
package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	// Version is the fast path's version, which every open must send.
	Version = 1
	// MinFrame is the smallest frame body, in bytes ("{}").
	MinFrame = 2
	// MaxFrame is the largest frame body a request may have, in bytes (64 KiB).
	MaxFrame = 64 << 10
	// HeaderLen is the length of a frame's header, the body's length.
	HeaderLen = 4
)

// AppendFrame appends the frame of body (its header, then body) to b.
func AppendFrame(b, body []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...)
}

// WriteFrame writes the frame of body to w with one write call, as the protocol
// asks (a frame written in pieces may be cut by the daemon's read timeout).
func WriteFrame(w io.Writer, body []byte) error {
	_, err := w.Write(AppendFrame(make([]byte, 0, HeaderLen+len(body)), body))
	return err
}

// A LengthError is a frame whose length is outside the limits.
type LengthError struct {
	Length   uint32
	Min, Max int
}

func (e *LengthError) Error() string {
	return fmt.Sprintf("frame length %d is outside %d..%d: send a 4-byte big-endian length, then that many bytes of JSON", e.Length, e.Min, e.Max)
}

// A TruncatedError is a frame that stopped short: Got of its Want bytes came
// (counting the header; Want is HeaderLen while the header is incomplete) before
// the read failed with Err.
type TruncatedError struct {
	Got, Want int
	Err       error
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("frame incomplete: %d of its %d bytes: %v", e.Got, e.Want, e.Err)
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// ReadFrame reads one frame from r and returns its body: in buf when buf has
// room, else in a new slice (pass the last body back in to reuse it). Its length
// must be within MinFrame..limit (limit 0: MaxFrame), or the error is a
// *LengthError and nothing more is read. A reader that ends before the frame's
// first byte returns io.EOF; one that fails later returns a *TruncatedError
// wrapping the read's error. ReadFrame reads only the frame's bytes: wrap a
// connection in a bufio.Reader for speed.
func ReadFrame(r io.Reader, buf []byte, limit int) ([]byte, error) {
	if limit <= 0 {
		limit = MaxFrame
	}
	if cap(buf) < 512 {
		buf = make([]byte, 512) // the header is read into buf: reused, a read allocates nothing
	}
	hdr := buf[:HeaderLen]
	if k, err := io.ReadFull(r, hdr); err != nil {
		if k == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, &TruncatedError{Got: k, Want: HeaderLen, Err: err}
	}
	n := binary.BigEndian.Uint32(hdr)
	if n < MinFrame || uint64(n) > uint64(limit) {
		return nil, &LengthError{Length: n, Min: MinFrame, Max: limit}
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	body := buf[:n]
	if k, err := io.ReadFull(r, body); err != nil {
		return nil, &TruncatedError{Got: HeaderLen + k, Want: HeaderLen + int(n), Err: err}
	}
	return body, nil
}
