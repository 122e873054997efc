package server

import (
	"testing"
	"time"
)

// Seams for the package's external tests.

// FakePeer gives the connections accepted on the Unix socket at path the
// identity p instead of the test's own (every test connection comes from one
// uid), for the rest of the test: the per-user limits and the admin check see p.
func FakePeer(t testing.TB, path string, p Peer) {
	fakePeers.Store(path, p)
	t.Cleanup(func() { fakePeers.Delete(path) })
}

// ReclaimIdleAt applies the idle timeout once, as if the wall clock read wall:
// the test, not the idler's ticker, says when.
func (s *Server) ReclaimIdleAt(wall time.Time) { s.reclaimIdle(wall) }

// FastConns returns the fast path's connections that carry a session, and
// those that do not (yet).
func (s *Server) FastConns() [2]int {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	return [2]int{s.tr.acct.sessions, s.tr.acct.open - s.tr.acct.sessions}
}

// Decisions returns how many decision passes the daemon took (the core's
// Decide): the tests assert that a step is taken at once, by structure.
func (s *Server) Decisions() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decisions
}

// LoseUnclaimedNow loses the recovered sessions no client resumed, as the end of
// the recover window does.
func (s *Server) LoseUnclaimedNow() {
	var out []func()
	s.mu.Lock()
	s.loseUnclaimed(&out)
	s.unlockRun(out)
}
