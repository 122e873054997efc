package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/protocol"
)

// FuzzFrames feeds arbitrary bytes to the fast path as one connection's input,
// then the end of its stream. The connection is the daemon's own (a fastConn
// with its reader loop, the real decoding, checks and handlers, the connection
// limits), on a connection in memory: the reader runs in the fuzz goroutine and
// nothing waits on a timeout, so an input costs microseconds and its coverage
// is the same every run. After each input:
//
//   - every frame the daemon sent is a whole frame holding a JSON object, a
//     success or an error with a code of the protocol's and a sentence;
//   - the connection's session, if it opened one, is gone (closed, or lost at
//     the end of the stream), and nothing else changed: the resident session
//     still runs its iterations;
//   - the event log, written by the real writer, reads back (eventlog.Read), the
//     lines written for this input at least.
//
// A resident session (pack: a lane of its own) holds half the memory, so the
// inputs' bigger jobs wait for admission.
//
//	go test -run '^$' -fuzz FuzzFrames -fuzztime 20s ./server
func FuzzFrames(f *testing.F) {
	for _, seed := range frameSeeds() {
		f.Add(seed)
	}
	p, err := core.Lookup("pack")
	if err != nil {
		f.Fatal(err)
	}
	lg := &checkedLog{}
	lg.w = eventlog.NewWriter(&lg.buf)
	// No timer of the daemon's fires within an input: a session ending an
	// iteration holds its lane until its next request or its end (Grace), and
	// no lease runs out.
	s, err := New(Config{Policy: p, CapacityMiB: 1000, Log: lg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Grace: time.Hour, Lease: time.Hour, IdleTimeout: -1,
		Models: func(name string) (Model, bool) {
			return Model{PersistentMiB: 100, EphemeralMiB: 50, IterS: 0.01, StartupS: 1, Demand: 0.5}, name == "m"
		}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.Shutdown)
	resident, err := s.Open(OpenRequest{Job: "resident", PersistentMiB: 300, EphemeralMiB: 200}, "fuzz", nil, func(OpenReply, error) {})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &memConn{in: bytes.NewReader(in)}
		fc := newFastConn(s, c)
		fc.acct.user = acctTCP
		if r, _, _ := s.addConn(fc); r != connAdded {
			t.Fatalf("connection not taken: %v", r)
		}
		fc.serve() // reads every frame, then the end of the stream
		fc.waitWriter()
		if err := checkReplies(c.written()); err != nil {
			t.Fatalf("input %q: %v", in, err)
		}
		s.mu.Lock()
		left := len(s.sessions)
		s.mu.Unlock()
		if left != 1 {
			t.Fatalf("input %q: %d sessions left, want the resident one only: %v", in, left, s.Sessions())
		}
		if err := iterateIn(s, resident); err != nil {
			t.Fatalf("input %q: the resident session: %v", in, err)
		}
		if err := lg.check(); err != nil {
			t.Fatalf("input %q: %v", in, err)
		}
	})
}

// frameSeeds are valid frames of every request, with every field, in the
// sequences a client sends them, and malformed ones.
func frameSeeds() [][]byte {
	fr := func(bodies ...string) []byte {
		var b []byte
		for _, body := range bodies {
			b = protocol.AppendFrame(b, []byte(body))
		}
		return b
	}
	open := `{"op":"open","id":1,"version":1,"job":"f","persistent_mib":100,"ephemeral_mib":50,"declared_s":3,"startup_s":0.5,"priority":1,"iterations":10,"kind":"train","batch_size":32}`
	return [][]byte{
		fr(open),
		fr(open, `{"op":"begin","id":2}`, `{"op":"end","id":3,"duration_s":0.5,"peak_mib":120}`, `{"op":"close","id":4}`),
		fr(open, `{"op":"begin","id":2}`, `{"op":"end","id":3,"next":true}`, `{"op":"end","id":4,"duration_s":1e-9}`, `{"op":"close","id":5,"finished":false}`),
		fr(open, `{"op":"measured","id":2,"iter_s":0.01,"peak_mib":150,"persistent_mib":100,"iterations":3}`, `{"op":"heartbeat"}`, `{"op":"close","id":3,"finished":true}`),
		fr(`{"op":"open","id":1,"version":1,"job":"g","model":"m","kind":"infer","iterations":5}`, `{"op":"begin","id":2}`, `{"op":"end","id":3}`),
		fr(`{"op":"open","id":1,"version":1,"job":"big","persistent_mib":600,"ephemeral_mib":300}`, `{"op":"begin","id":2}`), // waits for admission
		fr(`{"op":"open","id":1,"version":1,"job":"r","persistent_mib":1,"resume":true}`),
		fr(`{"op":"open","id":1,"version":1,"job":"gang","persistent_mib":1,"gpus":2}`),
		fr(`{"op":"open","id":1,"version":1,"job":"c","persistent_mib":1,"claim":"uid-1"}`),
		fr(`{"op":"open","id":1,"version":1,"job":"t","persistent_mib":1,"token":"x","iter_s":0.1,"demand":0.5}`),
		fr(`{"op":"heartbeat"}`),
		fr(`{"op":"begin","id":1}`),
		fr(`{"op":"fly","id":1}`),
		fr(open, open),
		fr(`{"OP":"open","id":1,"version":1,"job":"h\ud800"}`),
		fr(`{"op":"open","id":1,"version":1,"job":"i` + "\xff" + `"}`),
		fr(`{"op":"open","id":1,"version":1,"job":"k","persistent_mib":"lots"}`),
		fr(`{"op":"open","id":1,"version":1,"job":"k","persistent_mib":1e309}`),
		{0, 0, 0, 3, '{', '}', '}'},
		{0, 0, 0, 0},
		{0xff, 0xff, 0xff, 0xff},
		fr(`[1,2]`),
		fr(`{"op":"heartbeat"}{"op":"begin","id":1}`),
		fr(open)[:12],
	}
}

// memConn is a connection in memory: reads come from in, then the end of the
// stream; writes are kept; deadlines do nothing, since nothing here waits.
type memConn struct {
	in  *bytes.Reader
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *memConn) Read(p []byte) (int, error) { return c.in.Read(p) }
func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}
func (c *memConn) written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out.Bytes())
}
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "fuzz" }

// waitWriter waits for the connection's writer goroutine, if one runs, to have
// written everything and exited: a few writes to memory, no timeout.
func (fc *fastConn) waitWriter() {
	for {
		fc.wmu.Lock()
		busy := fc.writing
		fc.wmu.Unlock()
		if !busy {
			return
		}
		runtime.Gosched()
	}
}

// checkReplies checks that b is whole frames, each a success or an error with a
// code of the protocol's and a sentence.
func checkReplies(b []byte) error {
	for len(b) > 0 {
		if len(b) < protocol.HeaderLen {
			return fmt.Errorf("%d bytes after the last whole frame", len(b))
		}
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < protocol.HeaderLen+n {
			return fmt.Errorf("a frame of %d bytes cut at %d", n, len(b)-protocol.HeaderLen)
		}
		body := b[protocol.HeaderLen : protocol.HeaderLen+n]
		b = b[protocol.HeaderLen+n:]
		var rep struct {
			ID    *int64 `json:"id"`
			OK    *bool  `json:"ok"`
			Code  string `json:"code"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &rep); err != nil || rep.ID == nil || rep.OK == nil {
			return fmt.Errorf("reply %s: not a reply (%v)", body, err)
		}
		if !*rep.OK && (rep.Error == "" || !slices.ContainsFunc(protocol.Codes, func(c protocol.CodeInfo) bool { return c.Code == rep.Code && c.FastPath })) {
			return fmt.Errorf("error reply %s: want a fast-path code of the protocol's and a sentence", body)
		}
	}
	return nil
}

// iterateIn runs one iteration of the admitted session ss, which nothing else
// drives, through the server's calls.
func iterateIn(s *Server, ss *Session) error {
	granted := make(chan error, 1)
	if err := s.Begin(ss, func(_ BeginReply, err error) { granted <- err }); err != nil {
		return err
	}
	select {
	case err := <-granted:
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("its begin was not granted at once: its lane is free")
	}
	ended := make(chan error, 1)
	if err := s.End(ss, 0, 0, func(err error) { ended <- err }); err != nil {
		return err
	}
	return <-ended
}

// checkedLog is a real event log (eventlog.Writer) in memory; check reads back
// what was written since it last did.
type checkedLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	w       *eventlog.Writer
	checked int
}

func (l *checkedLog) Emit(e eventlog.Event) {
	l.mu.Lock()
	l.w.Emit(e)
	l.mu.Unlock()
}

func (l *checkedLog) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.Flush(); err != nil {
		return err
	}
	b := l.buf.Bytes()
	end := bytes.LastIndexByte(b, '\n') + 1
	if end <= l.checked {
		return nil
	}
	err := eventlog.Read(bytes.NewReader(b[l.checked:end]), "the daemon's event log", func(eventlog.Event) error { return nil })
	l.checked = end
	return err
}
