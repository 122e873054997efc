package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"connectrpc.com/connect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/core"
)

// Handler returns the daemon's HTTP handler: the connect API (gRPC, gRPC-Web and
// HTTP/JSON on the same routes) and /metrics. Serve it with HTTP/2 cleartext
// enabled (see NewHTTPServer) so gRPC clients work without TLS.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	api := &connectAPI{s: s}
	auth := connect.WithInterceptors(s.authInterceptor()) // access.go
	mux.Handle(salusv1connect.NewSchedulerServiceHandler(api, auth))
	mux.Handle(salusv1connect.NewAdminServiceHandler(api, auth))
	mux.Handle("/metrics", s.MetricsHandler())
	return mux
}

// NewHTTPServer returns an http.Server for Handler that speaks HTTP/1.1 and
// HTTP/2 cleartext (h2c), as gRPC clients need.
func (s *Server) NewHTTPServer() *http.Server {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: s.Handler(), Protocols: &p}
	hs.ConnContext = connContext // who connected over a Unix socket (access.go)
	return hs
}

type connectAPI struct{ s *Server }

func connectErr(err error) error {
	code := connect.CodeInvalidArgument
	switch CodeOf(err) {
	case CodeUnknown, CodeLost:
		code = connect.CodeNotFound
	case CodeWrongPhase, CodeBusy, CodeNotOpen, CodeAlreadyOpen:
		code = connect.CodeFailedPrecondition
	case CodeRejected:
		code = connect.CodeResourceExhausted
	case CodeShutdown, CodeDraining:
		code = connect.CodeUnavailable
	case CodeUnauthorized:
		code = connect.CodeUnauthenticated
	case CodePermissionDenied:
		code = connect.CodePermissionDenied
	case CodeEvicted:
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
		return nil, errorf(CodeWrongPhase, "session %q was opened on the fast path: call it there", id)
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
		IterS: m.IterS, Demand: m.Demand, Peer: callerOf(ctx).peer, Resume: m.Resume},
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
			Resumed: r.Resumed, RecoverMs: r.RecoverMS}), nil
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

func (a *connectAPI) ListLanes(ctx context.Context, req *connect.Request[salusv1.ListLanesRequest]) (*connect.Response[salusv1.ListLanesResponse], error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &salusv1.ListLanesResponse{CapacityMib: s.sched.Capacity(), FreeMib: s.sched.Free()}
	for _, l := range s.sched.Lanes() {
		out.Lanes = append(out.Lanes, &salusv1.Lane{Id: int32(l.ID), SizeMib: l.Size, PersistentMib: l.Persistent,
			MaxEphemeralMib: l.MaxEphemeral, Jobs: int32(l.Jobs), Ready: int32(s.sched.ReadyCount(l.ID))})
	}
	return connect.NewResponse(out), nil
}

func (a *connectAPI) GetStats(ctx context.Context, req *connect.Request[salusv1.GetStatsRequest]) (*connect.Response[salusv1.GetStatsResponse], error) {
	return connect.NewResponse(a.s.Stats()), nil
}

func (a *connectAPI) GetPolicy(ctx context.Context, req *connect.Request[salusv1.GetPolicyRequest]) (*connect.Response[salusv1.GetPolicyResponse], error) {
	p := a.s.cfg.Policy
	return connect.NewResponse(&salusv1.GetPolicyResponse{Name: p.Name, Description: p.Description, StartupOnGpu: p.StartupOnGPU,
		CapacityMib: a.s.cfg.CapacityMiB, Available: core.Names()}), nil
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
			EphemeralMib: ss.job.Ephemeral, DeclaredS: ss.job.Declared.Seconds(), Transport: ss.transport})
		if ss.peer != nil {
			out[len(out)-1].Owner = ss.peer.String()
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ArrivalS < out[j].ArrivalS })
	return out
}

// Stats returns the daemon's counters.
func (s *Server) Stats() *salusv1.GetStatsResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &salusv1.GetStatsResponse{UptimeS: time.Since(s.start).Seconds(), Sessions: int32(len(s.sessions)), Waiting: int32(len(s.sched.Waiting())),
		Iterations: s.stats.iterations, Finished: s.stats.finished, Lost: s.stats.lost, Switches: s.stats.switches, Draining: s.draining}
}
