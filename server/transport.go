package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Bounded and deadlined I/O, for both transports: no client, however slow,
// silent or greedy, may hold the daemon's resources or delay another client.

// Error codes of the transports' limits (see docs/protocol.md).
const (
	// CodeTooManyConns refuses a connection beyond Config.MaxConns.
	CodeTooManyConns = "too_many_connections"
	// CodeTimeout closes a connection that did not open its session within the
	// handshake timeout, or stalled in the middle of a frame.
	CodeTimeout = "timeout"
)

// Default limits (Config).
const (
	DefaultMaxConns         = 4096
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultReadTimeout      = 10 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultReplyQueue       = 64 << 10
	DefaultMaxBodyBytes     = 1 << 20
)

func (c *Config) setLimits() {
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.ReplyQueue <= 0 {
		c.ReplyQueue = DefaultReplyQueue
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
}

// backoff handles an accept error: a temporary one (the process is out of file
// descriptors or memory, the connection was reset before it was accepted) is
// logged, rate-limited, and waited out, 5 ms doubling to 1 s as net/http's
// Server.Serve does; true means accept again. Any other error ends the listener.
func (s *Server) backoff(l net.Listener, err error, delay *time.Duration) bool {
	if !temporary(err) {
		return false
	}
	if *delay == 0 {
		*delay = 5 * time.Millisecond
	} else {
		*delay = min(2**delay, time.Second)
	}
	s.logLimited(slog.LevelWarn, "accept", "accept failed, retrying", "listener", l.Addr().String(), "err", err, "retry_in", *delay)
	t := time.NewTimer(*delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stopped():
	}
	return true
}

func temporary(err error) bool {
	if isTimeout(err) {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// refuseLinger bounds how long a refused connection is kept to deliver its
// refusal.
const refuseLinger = 200 * time.Millisecond

// refuse sends msg on a connection the daemon will not serve, and closes it. It
// waits for the client's end (within refuseLinger) on a goroutine of its own,
// because closing a socket with unread input resets it, and the reset can
// destroy the refusal before the client reads it. Those goroutines are bounded:
// beyond them, a connection is closed without a word.
func (s *Server) refuse(c net.Conn, msg []byte) {
	s.tr.mu.Lock()
	if s.tr.refusing == nil {
		s.tr.refusing = make(chan struct{}, 64)
	}
	sem := s.tr.refusing
	s.tr.mu.Unlock()
	select {
	case sem <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-sem }()
		c.SetDeadline(time.Now().Add(refuseLinger))
		c.Write(msg)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 1<<20))
		c.Close()
	}()
}

// errorFrame is an unsolicited error frame (id 0).
func errorFrame(code, msg string) []byte {
	b, _ := json.Marshal(fastError{Code: code, Error: msg})
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// rateLimiter keeps the log readable when something happens to many connections
// at once (accept errors, refusals, timeouts, dropped clients): each kind is
// logged at most once a second, with the count of those left out.
type rateLimiter struct {
	mu      sync.Mutex
	last    map[string]time.Time
	skipped map[string]int
}

func (s *Server) logLimited(level slog.Level, key, msg string, args ...any) {
	if !s.logger.Enabled(context.Background(), level) {
		return
	}
	r := &s.tr.rl
	r.mu.Lock()
	if r.last == nil {
		r.last, r.skipped = map[string]time.Time{}, map[string]int{}
	}
	now := time.Now()
	if t, ok := r.last[key]; ok && now.Sub(t) < time.Second {
		r.skipped[key]++
		r.mu.Unlock()
		return
	}
	n := r.skipped[key]
	r.skipped[key], r.last[key] = 0, now
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "similar_left_out", n)
	}
	s.logger.Log(context.Background(), level, msg, args...)
}

// logWriter turns net/http's error log into rate-limited slog warnings.
type logWriter struct{ s *Server }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.logLimited(slog.LevelWarn, "http", "HTTP API: "+strings.TrimSpace(string(p)))
	return len(p), nil
}

// checkText refuses a frame body that is not valid UTF-8, or whose strings
// escape a lone UTF-16 surrogate: encoding/json would silently replace either
// with U+FFFD, and two job names would collide.
func checkText(b []byte) error {
	plain := true
	for _, c := range b {
		if c >= utf8.RuneSelf || c == '\\' {
			plain = false
			break
		}
	}
	if plain { // the common case: ASCII without escapes
		return nil
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return fmt.Errorf("frame body is not valid UTF-8: byte %d (%#x) does not start a character: send strings as UTF-8", i, c)
			}
			i += size
			continue
		}
		if c != '\\' {
			i++
			continue
		}
		if i+1 < len(b) && b[i+1] == 'u' {
			r, ok := hex4(b, i+2)
			if ok && r >= 0xd800 && r < 0xdc00 { // a high surrogate needs a low one next
				if lo, ok := hex4(b, i+8); ok && i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' && lo >= 0xdc00 && lo < 0xe000 {
					i += 12
					continue
				}
			}
			if ok && r >= 0xd800 && r < 0xe000 {
				return fmt.Errorf("frame body is not valid UTF-8: the escape %s at byte %d is half a UTF-16 surrogate pair: send strings as UTF-8", b[i:i+6], i)
			}
			i += 6
			continue
		}
		i += 2 // an escaped character: a backslash does not start the next escape
	}
	return nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return rune(n), err == nil
}

// requestKeys are the keys of fastRequest, as docs/protocol.md spells them.
var requestKeys = func() []string {
	t := reflect.TypeFor[fastRequest]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return keys
}()

// checkKeys refuses a key that differs from one of the protocol's only in case,
// which encoding/json would take for it (it also folds the Kelvin sign into k and
// the long s into s). It returns the request's id when its key is spelled right.
func checkKeys(b []byte) (int64, error) {
	suspect := false
	for _, c := range b {
		if c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf || c == '\\' {
			suspect = true
			break
		}
	}
	if !suspect { // keys of lower-case ASCII without escapes are the protocol's or unknown
		return 0, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, nil // the frame decoded before: cannot happen
	}
	var id int64
	if raw, ok := m["id"]; ok {
		json.Unmarshal(raw, &id)
	}
	for k := range m {
		for _, want := range requestKeys {
			if k != want && strings.EqualFold(k, want) {
				return id, fmt.Errorf("key %q: keys are case-sensitive: write %q", k, want)
			}
		}
	}
	return id, nil
}

// checkStrings refuses strings that are not valid UTF-8, whatever the transport.
func checkStrings(req OpenRequest) error {
	for _, f := range []struct{ name, v string }{{"job", req.Job}, {"model", req.Model}, {"kind", req.Kind}} {
		if !utf8.ValidString(f.v) {
			return errorf(CodeBadRequest, "open: field %s %q is not valid UTF-8: send strings as UTF-8", f.name, bytes.ToValidUTF8([]byte(f.v), []byte("\uFFFD")))
		}
	}
	return nil
}
