package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
	"github.com/salusgo/salus/workload"
)

// TestServeShutsDownCleanly runs the daemon's listeners, serves jobs over the
// Unix socket, and stops it as SIGTERM does: the client still
// connected is told, the event log is complete and the socket file is gone.
func TestServeShutsDownCleanly(t *testing.T) {
	dir := t.TempDir()
	sock, events := filepath.Join(dir, "s.sock"), filepath.Join(dir, "events.jsonl")
	file, err := eventlog.Create(events)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := core.Lookup("pack")
	srv, err := server.New(server.Config{Policy: p, CapacityMiB: 14336, Log: file, Models: catalogModels(workload.Default()),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, srv, slog.New(slog.NewTextHandler(io.Discard, nil)), file, "", sock, "")
	}()
	var s *client.Session
	for i := 0; ; i++ {
		s, err = client.Open(context.Background(), "unix:"+sock, client.Options{Job: "a", Model: "resnet50", Iterations: 3})
		if err == nil || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.LaneMiB <= 0 {
		t.Errorf("a catalog model should be sized from the catalog: %+v", s.Admission)
	}
	s.Begin()
	s.End(0, 0)
	s.Close(true)
	b, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "b", PersistentMiB: 10, EphemeralMiB: 10})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body := rec.Body.String(); !strings.Contains(body, "salus_sessions 1") {
		t.Errorf("/metrics: %s", body)
	}
	cancel() // what SIGTERM does
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.Begin(); !client.Ended(err) || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("client after shutdown: %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
	var kinds []string
	eventlog.ReadFile(events, func(e eventlog.Event) error {
		kinds = append(kinds, e.Kind+":"+e.Job)
		return nil
	})
	got := strings.Join(kinds, " ")
	for _, want := range []string{"run:", "finish:a", "lost:b"} {
		if !strings.Contains(got, want) {
			t.Errorf("event log lacks %s: %s", want, got)
		}
	}
}
