package server

import (
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/protocol"
)

// Handler returns the daemon's HTTP handler: the connect API (gRPC, gRPC-Web and
// HTTP/JSON on the same routes) and /metrics. Serve it with HTTP/2 cleartext
// enabled (see NewHTTPServer) so gRPC clients work without TLS.
//
// Every request is bounded: its body to Config.MaxBodyBytes as sent, and each
// connect message to as much once decompressed (so a small gzip body cannot
// inflate to gigabytes); its body must arrive within Config.ReadTimeout, and each
// response write completes within Config.WriteTimeout.
//
// A request with a field the API does not have (a misspelt key in JSON, an
// unknown field number in protobuf), or an enum value it does not define, is
// refused with invalid_argument naming it, never ignored: a client that sends a
// field this daemon does not know (a resume token, a claim secret) must hear so.
// /metrics answers GET and HEAD only (405 otherwise).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	api := &connectAPI{s: s}
	checks := connect.WithInterceptors(s.authInterceptor(), strictInterceptor(), boundStrings()) // access.go, here, validate.go
	maxBytes := s.cfg.MaxBodyBytes
	limit := connect.WithHandlerOptions(connect.WithReadMaxBytes(int(maxBytes)),
		connect.WithCompression("gzip", func() connect.Decompressor { return &boundedGzip{max: maxBytes} },
			func() connect.Compressor { return gzip.NewWriter(io.Discard) }),
		connect.WithCodec(strictJSON{"json"}), connect.WithCodec(strictJSON{"json; charset=utf-8"}))
	mux.Handle(salusv1connect.NewSchedulerServiceHandler(api, checks, limit))
	mux.Handle(salusv1connect.NewAdminServiceHandler(api, checks, limit))
	mux.Handle("GET /metrics", s.MetricsHandler()) // GET and HEAD; the mux answers others 405
	return s.bounded(mux)
}

// strictJSON is connect's JSON codec, except that it refuses unknown fields and
// enum names (connect's discards them).
type strictJSON struct{ name string }

func (c strictJSON) Name() string { return c.name }

func (c strictJSON) Marshal(m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", m)
	}
	return protojson.MarshalOptions{}.Marshal(pm)
}

func (c strictJSON) Unmarshal(b []byte, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", m)
	}
	if len(b) == 0 {
		return errors.New("zero-length payload is not a valid JSON object")
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(b, pm); err != nil {
		return fmt.Errorf("%s: %w (the API's fields are in api/salus/v1/salus.proto; a daemon older than the client does not know newer ones)", pm.ProtoReflect().Descriptor().Name(), err)
	}
	return nil
}

// strictInterceptor refuses a request message with fields the API does not
// define (kept as unknown fields by the protobuf decoder) or enum values out of
// their enum's range, naming them.
func strictInterceptor() connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if m, ok := req.Any().(proto.Message); ok {
				if err := checkKnown(m.ProtoReflect(), ""); err != nil {
					return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: %w", protocol.CodeBadRequest, err))
				}
			}
			return next(ctx, req)
		}
	})
}

// checkKnown walks m: every field known, every enum value defined.
func checkKnown(m protoreflect.Message, path string) error {
	if u := m.GetUnknown(); len(u) > 0 {
		num, _, _ := protowire.ConsumeTag(u)
		return fmt.Errorf("%s has a field the API does not define (number %d): leave it out, or update the daemon", cmp.Or(path, string(m.Descriptor().Name())), num)
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		if path != "" {
			name = path + "." + name
		}
		check := func(v protoreflect.Value) {
			switch {
			case fd.Enum() != nil && fd.Enum().Values().ByNumber(v.Enum()) == nil:
				err = fmt.Errorf("field %s: %d is not a value of %s: use one of %s", name, v.Enum(), fd.Enum().Name(), enumNames(fd.Enum()))
			case fd.Message() != nil && !fd.IsMap():
				err = checkKnown(v.Message(), name)
			}
		}
		switch {
		case fd.IsList():
			for i := 0; i < v.List().Len() && err == nil; i++ {
				check(v.List().Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				if vd := fd.MapValue(); vd.Enum() != nil && vd.Enum().Values().ByNumber(mv.Enum()) == nil {
					err = fmt.Errorf("field %s: %d is not a value of %s", name, mv.Enum(), vd.Enum().Name())
				} else if vd.Message() != nil {
					err = checkKnown(mv.Message(), name)
				}
				return err == nil
			})
		default:
			check(v)
		}
		return err == nil
	})
	return err
}

// enumNames lists an enum's value names, for a message.
func enumNames(e protoreflect.EnumDescriptor) string {
	vs := e.Values()
	names := make([]string, vs.Len())
	for i := range names {
		names[i] = string(vs.Get(i).Name())
	}
	return strings.Join(names, ", ")
}

// bounded applies the per-request limits of Handler. The read and write timeouts
// are set per request rather than on the http.Server, whose ReadTimeout and
// WriteTimeout run from the request's start to the response's end: they would
// cut the calls that wait (an open waiting for admission, a begin for its grant),
// and on HTTP/1.1 an expired ReadTimeout cancels the request's context while its
// handler runs. Here the body must arrive within the read timeout, from when the
// handler is called; once it has, the read deadline is cleared (so a waiting call
// is not cancelled); the write deadline starts with the response.
func (s *Server) bounded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// Not for a request without a body: its connection's next read (HTTP/1.1
		// watching for the client going away) has already begun, and would time
		// out under the handler.
		if r.ContentLength != 0 {
			rc.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout)) // ErrNotSupported in a test recorder
		}
		// A copy, as http.MaxBytesHandler makes: the server looks at the original
		// body after the handler, to decide whether the connection can be reused.
		r2 := *r
		r2.Body = &bodyReader{ReadCloser: http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), rc: rc}
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.cfg.WriteTimeout}, &r2)
	})
}

// boundedGzip is connect's gzip decompressor, but it stops once a message has
// inflated past the limit: connect would inflate the rest (up to about 1 GiB from a
// 1 MiB body) only to report its size.
type boundedGzip struct {
	gzip.Reader
	max, n int64
}

func (z *boundedGzip) Read(p []byte) (int, error) {
	n, err := z.Reader.Read(p)
	if z.n += int64(n); z.n > z.max+1 {
		return n, fmt.Errorf("it inflates to more than %d bytes", z.max)
	}
	return n, err
}

func (z *boundedGzip) Reset(r io.Reader) error {
	z.n = 0
	return z.Reader.Reset(r)
}

// bodyReader clears the read deadline once the body is read, and makes a body
// the client sent malformed (a bad chunked encoding, one cut short) an
// invalid_argument (HTTP 400): connect takes an error it does not know for its
// own (unknown, 500).
type bodyReader struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	if err != nil && err != io.EOF {
		var tooLarge *http.MaxBytesError
		var ce *connect.Error
		if !errors.As(err, &tooLarge) && !errors.As(err, &ce) && !errors.Is(err, os.ErrDeadlineExceeded) {
			err = connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: the request's body is malformed (%w): send it whole, with a valid Content-Length or chunked encoding", protocol.CodeBadRequest, err))
		}
	}
	return n, err
}

// deadlineWriter sets the write deadline when the response starts.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
}

func (w *deadlineWriter) start() {
	if !w.started {
		w.started = true
		w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

// Flush lets connect stream through the wrapper.
func (w *deadlineWriter) Flush() {
	w.start()
	w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// HTTP limits that need no knob.
const (
	httpIdleTimeout    = 2 * time.Minute
	httpMaxHeaderBytes = 64 << 10
)

// NewHTTPServer returns an http.Server for Handler that speaks HTTP/1.1 and
// HTTP/2 cleartext (h2c), as gRPC clients need, with every wait bounded: a
// request's header must arrive within Config.HandshakeTimeout and be at most
// 64 KiB, an idle keep-alive connection is closed after 2 minutes, an HTTP/2
// connection that stops answering pings or taking data is closed, and its
// errors go to the daemon's log, rate-limited. Serve it on LimitListener to bound
// its connections.
func (s *Server) NewHTTPServer() *http.Server {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           s.Handler(),
		Protocols:         &p,
		ReadHeaderTimeout: s.cfg.HandshakeTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout:  httpIdleTimeout,
			PingTimeout:      s.cfg.ReadTimeout,
			WriteByteTimeout: s.cfg.WriteTimeout,
		},
		ErrorLog:    log.New(logWriter{s}, "", 0),
		ConnContext: connContext, // who connected over a Unix socket (access.go)
	}
}

type connectAPI struct{ s *Server }

func connectErr(err error) error {
	code := connect.CodeInvalidArgument
	switch CodeOf(err) {
	case protocol.CodeUnknown, protocol.CodeLost:
		code = connect.CodeNotFound
	case protocol.CodeWrongPhase, protocol.CodeBusy, protocol.CodeNotOpen, protocol.CodeAlreadyOpen:
		code = connect.CodeFailedPrecondition
	case protocol.CodeRejected:
		code = connect.CodeResourceExhausted
	case protocol.CodeShutdown, protocol.CodeDraining, protocol.CodeJournal:
		code = connect.CodeUnavailable
	case protocol.CodeUnauthorized:
		code = connect.CodeUnauthenticated
	case protocol.CodePermissionDenied, protocol.CodeResumeDenied, protocol.CodeClaimDenied:
		code = connect.CodePermissionDenied
	case protocol.CodeEvicted:
		code = connect.CodeAborted
	}
	if code.String() == CodeOf(err) { // connect already prints its code first
		return connect.NewError(code, err)
	}
	return connect.NewError(code, fmt.Errorf("%s: %w", CodeOf(err), err))
}

// session finds the session id for the caller that presents secret: only its
// opener may act on it.
func (a *connectAPI) session(id, secret string) (*Session, error) {
	ss, err := a.s.Lookup(id)
	if err != nil {
		return nil, err
	}
	if ss.transport != "connect" {
		return nil, errorf(protocol.CodeWrongPhase, "session %q was opened on the fast path: call it there", id)
	}
	if err := owned(ss, secret); err != nil {
		return nil, err
	}
	ss.touch()
	return ss, nil
}

func (a *connectAPI) OpenSession(ctx context.Context, req *connect.Request[salusv1.OpenSessionRequest]) (*connect.Response[salusv1.OpenSessionResponse], error) {
	m := req.Msg
	kind := ""
	switch m.Kind {
	case salusv1.JobKind_JOB_KIND_TRAINING:
		kind = "train"
	case salusv1.JobKind_JOB_KIND_INFERENCE:
		kind = "infer"
	}
	type result struct {
		r   OpenReply
		err error
	}
	ch := make(chan result, 1)
	ss, err := a.s.Open(OpenRequest{Job: m.Job, Model: m.Model, PersistentMiB: m.PersistentMib, EphemeralMiB: m.EphemeralMib,
		DeclaredS: m.DeclaredS, Priority: int(m.Priority), Kind: kind, Iterations: int(m.Iterations), StartupS: m.StartupS,
		IterS: m.IterS, Demand: m.Demand, Peer: callerOf(ctx).peer, Resume: m.Resume, GPUs: int(m.Gpus), Claim: m.Claim,
		ResumeToken: m.ResumeToken, ClaimSecret: m.ClaimSecret, Share: m.Share},
		"connect", nil, func(r OpenReply, err error) { ch <- result{r, err} })
	if err != nil {
		return nil, connectErr(err)
	}
	select {
	case res := <-ch:
		if res.err != nil {
			return nil, connectErr(res.err)
		}
		r := res.r
		return connect.NewResponse(&salusv1.OpenSessionResponse{Session: r.Session, Lane: int32(r.Lane), LaneMib: r.LaneMiB,
			StartupOnGpu: r.StartupOnGPU, LeaseMs: r.LeaseMS, Policy: r.Policy, Emulated: r.Emulated, Secret: r.Secret,
			Resumed: r.Resumed, RecoverMs: r.RecoverMS, Gpus: int32s(r.GPUs), ResumeToken: r.ResumeToken}), nil
	case <-ctx.Done():
		a.s.Lose(ss, "client gave up waiting for admission: "+ctx.Err().Error())
		return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
	}
}

func (a *connectAPI) BeginIteration(ctx context.Context, req *connect.Request[salusv1.BeginIterationRequest]) (*connect.Response[salusv1.BeginIterationResponse], error) {
	ss, err := a.session(req.Msg.Session, req.Msg.Secret)
	if err != nil {
		return nil, connectErr(err)
	}
	type result struct {
		r   BeginReply
		err error
	}
	ch := make(chan result, 1)
	if err := a.s.Begin(ss, func(r BeginReply, err error) { ch <- result{r, err} }); err != nil {
		return nil, connectErr(err)
	}
	select {
	case res := <-ch:
		if res.err != nil {
			return nil, connectErr(res.err)
		}
		return connect.NewResponse(&salusv1.BeginIterationResponse{Lane: int32(res.r.Lane), WaitUs: res.r.WaitUS, IdleYielded: res.r.IdleYielded}), nil
	case <-ctx.Done():
		a.s.Lose(ss, "client gave up waiting for its iteration: "+ctx.Err().Error())
		return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
	}
}

func (a *connectAPI) EndIteration(ctx context.Context, req *connect.Request[salusv1.EndIterationRequest]) (*connect.Response[salusv1.EndIterationResponse], error) {
	ss, err := a.session(req.Msg.Session, req.Msg.Secret)
	if err != nil {
		return nil, connectErr(err)
	}
	// Under emulation the end is processed when the device model has done the
	// iteration's work: the call returns then.
	ch := make(chan error, 1)
	if err := a.s.End(ss, req.Msg.DurationS, req.Msg.PeakMib, func(err error) { ch <- err }); err != nil {
		return nil, connectErr(err)
	}
	select {
	case err := <-ch:
		if err != nil {
			return nil, connectErr(err)
		}
		return connect.NewResponse(&salusv1.EndIterationResponse{}), nil
	case <-ctx.Done():
		a.s.Lose(ss, "client gave up waiting for its iteration's end: "+ctx.Err().Error())
		return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
	}
}

func (a *connectAPI) CloseSession(ctx context.Context, req *connect.Request[salusv1.CloseSessionRequest]) (*connect.Response[salusv1.CloseSessionResponse], error) {
	ss, err := a.session(req.Msg.Session, req.Msg.Secret)
	if err != nil {
		return nil, connectErr(err)
	}
	if err := a.s.Close(ss, !req.Msg.Lost, "closed early"); err != nil {
		return nil, connectErr(err)
	}
	return connect.NewResponse(&salusv1.CloseSessionResponse{}), nil
}

func (a *connectAPI) Heartbeat(ctx context.Context, req *connect.Request[salusv1.HeartbeatRequest]) (*connect.Response[salusv1.HeartbeatResponse], error) {
	if _, err := a.session(req.Msg.Session, req.Msg.Secret); err != nil {
		return nil, connectErr(err)
	}
	return connect.NewResponse(&salusv1.HeartbeatResponse{}), nil
}

func (a *connectAPI) ListSessions(ctx context.Context, req *connect.Request[salusv1.ListSessionsRequest]) (*connect.Response[salusv1.ListSessionsResponse], error) {
	return connect.NewResponse(&salusv1.ListSessionsResponse{Sessions: a.s.Sessions()}), nil
}

func (a *connectAPI) EvictSession(ctx context.Context, req *connect.Request[salusv1.EvictSessionRequest]) (*connect.Response[salusv1.EvictSessionResponse], error) {
	reason, err := a.s.Evict(req.Msg.Job, callerOf(ctx).who, req.Msg.Reason)
	if err != nil {
		return nil, connectErr(err)
	}
	a.s.mu.Lock()
	free := a.s.sched.Free()
	a.s.mu.Unlock()
	return connect.NewResponse(&salusv1.EvictSessionResponse{Reason: reason, FreeMib: free}), nil
}

func (a *connectAPI) Drain(ctx context.Context, req *connect.Request[salusv1.DrainRequest]) (*connect.Response[salusv1.DrainResponse], error) {
	refused, sessions, err := a.s.Drain(!req.Msg.Resume, callerOf(ctx).who)
	if err != nil {
		return nil, connectErr(err)
	}
	return connect.NewResponse(&salusv1.DrainResponse{Draining: !req.Msg.Resume, Refused: int32(refused), Sessions: int32(sessions)}), nil
}

func (a *connectAPI) ReserveClaim(ctx context.Context, req *connect.Request[salusv1.ReserveClaimRequest]) (*connect.Response[salusv1.ReserveClaimResponse], error) {
	m := req.Msg
	in := ClaimIntent{DeclaredS: m.DeclaredS, Share: m.Share}
	if m.Priority != nil {
		p := int(*m.Priority)
		in.Priority = &p
	}
	r, err := a.s.Reserve(ClaimSpec{UID: m.Claim, Name: m.Name, GPU: int(m.Gpu), MemoryMiB: m.MemoryMib, Secret: m.Secret, Intent: in})
	if err != nil {
		return nil, connectErr(err)
	}
	return connect.NewResponse(&salusv1.ReserveClaimResponse{Existed: r.Existed, MemoryMib: r.MemoryMiB, GpuFreeMib: r.GPUFreeMiB, Secret: r.Secret, Share: r.Share}), nil
}

func (a *connectAPI) ListClaims(ctx context.Context, req *connect.Request[salusv1.ListClaimsRequest]) (*connect.Response[salusv1.ListClaimsResponse], error) {
	out := &salusv1.ListClaimsResponse{}
	for _, c := range a.s.ListClaims() {
		pc := &salusv1.Claim{Claim: c.UID, Name: c.Name, Gpu: int32(c.GPU), MemoryMib: c.MemoryMiB, DeclaredS: c.Intent.DeclaredS, Share: c.Share, Session: c.Session}
		if p := c.Intent.Priority; p != nil {
			v := int32(*p)
			pc.Priority = &v
		}
		out.Claims = append(out.Claims, pc)
	}
	return connect.NewResponse(out), nil
}

func (a *connectAPI) ReleaseClaim(ctx context.Context, req *connect.Request[salusv1.ReleaseClaimRequest]) (*connect.Response[salusv1.ReleaseClaimResponse], error) {
	existed, session, err := a.s.ReleaseClaim(req.Msg.Claim)
	if err != nil {
		return nil, connectErr(err)
	}
	return connect.NewResponse(&salusv1.ReleaseClaimResponse{Existed: existed, Session: session}), nil
}

func (a *connectAPI) ListLanes(ctx context.Context, req *connect.Request[salusv1.ListLanesRequest]) (*connect.Response[salusv1.ListLanesResponse], error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &salusv1.ListLanesResponse{CapacityMib: s.sched.Capacity(), FreeMib: s.sched.Free()}
	for _, l := range s.sched.Lanes() {
		out.Lanes = append(out.Lanes, &salusv1.Lane{Id: int32(l.ID), SizeMib: l.Size, PersistentMib: l.Persistent,
			MaxEphemeralMib: l.MaxEphemeral, Jobs: int32(l.Jobs), Ready: int32(s.sched.ReadyCount(l.ID)), Gpus: int32s(s.physical(laneGPUs(l)))})
	}
	claimed := s.claimedOn()
	for _, g := range s.sched.GPUs() {
		out.Gpus = append(out.Gpus, &salusv1.GPU{Index: int32(s.gpus[g.Index].Index), CapacityMib: g.Capacity, FreeMib: g.Free,
			Lanes: int32(len(g.Lanes)), Jobs: int32(g.Jobs), ClaimedMib: claimed[g.Index]})
	}
	return connect.NewResponse(out), nil
}

func (a *connectAPI) GetStats(ctx context.Context, req *connect.Request[salusv1.GetStatsRequest]) (*connect.Response[salusv1.GetStatsResponse], error) {
	return connect.NewResponse(a.s.Stats()), nil
}

func (a *connectAPI) GetPolicy(ctx context.Context, req *connect.Request[salusv1.GetPolicyRequest]) (*connect.Response[salusv1.GetPolicyResponse], error) {
	p := a.s.cfg.Policy
	return connect.NewResponse(&salusv1.GetPolicyResponse{Name: p.Name, Description: p.Description, StartupOnGpu: p.StartupOnGPU,
		CapacityMib: a.s.cfg.CapacityMiB, Available: core.Names(), Gpus: int32(len(a.s.gpus)), GpuPlacement: a.s.sched.GPUPlacement().Name(), Device: a.s.cfg.Device}), nil
}

// Sessions lists the open sessions, by arrival.
func (s *Server) Sessions() []*salusv1.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*salusv1.Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		v, _, _, _ := s.sched.JobInfo(ss.id)
		out = append(out, &salusv1.Session{Job: ss.id, Model: ss.model, State: phaseNames[ss.phase], Lane: int32(ss.lane),
			ArrivalS: ss.job.Arrival.Seconds(), AttainedS: v.Attained.Seconds(), Iterations: int32(v.Iterations), PersistentMib: ss.job.Persistent,
			EphemeralMib: ss.job.Ephemeral, DeclaredS: ss.job.Declared.Seconds(), Transport: ss.transport, Gpus: int32s(s.physical(ss.gpus)),
			Owner: owner(ss)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ArrivalS < out[j].ArrivalS })
	return out
}

// Stats returns the daemon's counters.
func (s *Server) Stats() *salusv1.GetStatsResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.journalHealth() // durable.go
	return &salusv1.GetStatsResponse{UptimeS: time.Since(s.start).Seconds(), Sessions: int32(len(s.sessions)), Waiting: int32(s.sched.WaitingCount()),
		Iterations: s.stats.iterations, Finished: s.stats.finished, Lost: s.stats.lost, Switches: s.stats.switches, Draining: s.draining,
		Journal: j.State, JournalError: j.Error, JournalWriteErrors: j.WriteErrors, JournalUnwrittenBytes: j.Unwritten,
		JournalDroppedEvents: j.Dropped, JournalRotations: j.Rotations}
}

// int32s converts GPU indices for the API.
func int32s(xs []int) []int32 {
	if len(xs) == 0 {
		return nil
	}
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

// laneGPUs returns the GPUs (core indices) lane l is on.
func laneGPUs(l core.LaneInfo) []int {
	if len(l.GPUs) > 0 {
		return l.GPUs
	}
	return []int{l.GPU}
}
