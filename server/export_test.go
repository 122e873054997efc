package server

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
