package client

// SetDefaultSockets points DefaultAddr at own (the user's default) and system
// for a test, until the returned function restores them.
func SetDefaultSockets(own, system string) (restore func()) {
	old := defaultSockets
	defaultSockets = [2]func() string{func() string { return own }, func() string { return system }}
	return func() { defaultSockets = old }
}
