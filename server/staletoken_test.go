package server

import (
	"context"
	"os"
	"testing"

	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/core"
)

// A stale token (another daemon's admin token file in the default place) over the
// API's Unix socket is not what decides: the caller's uid is. Over TCP, where no
// peer is known, the stale token is still refused.
func TestStaleTokenOverTheUnixSocketDefersToThePeer(t *testing.T) {
	p, err := core.Lookup("fifo")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Policy: p, CapacityMiB: 1000, Token: "user-token", AdminToken: "admin-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	const stale = "Bearer another-daemons-admin-token"
	unix := context.WithValue(context.Background(), connKey{}, &connInfo{unix: true, peer: &Peer{UID: uint32(os.Getuid())}})
	c, err := s.authenticate(unix, stale, salusv1connect.AdminServiceListSessionsProcedure)
	if err != nil || c.level != levelAdmin {
		t.Errorf("the daemon's uid with a stale token over the Unix socket: %+v, %v; want admin", c, err)
	}
	if _, err := s.authenticate(context.Background(), stale, salusv1connect.AdminServiceListSessionsProcedure); err == nil {
		t.Error("a stale token without a Unix peer was accepted")
	}
	other := context.WithValue(context.Background(), connKey{}, &connInfo{unix: true, peer: &Peer{UID: uint32(os.Getuid()) + 4242}})
	if _, err := s.authenticate(other, stale, salusv1connect.AdminServiceListSessionsProcedure); err == nil {
		t.Error("another uid's admin call with a stale token was accepted")
	}
}
