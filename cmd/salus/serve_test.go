package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

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
	file, err := eventlog.OpenAppend(events)
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
		done <- serveAddrs(ctx, srv, slog.New(slog.NewTextHandler(io.Discard, nil)), file, "", sock, "", listenAccess{}, "end")
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

// TestServeEmulatesTheCatalogModel: under --emulate, a job that names a catalog
// model and nothing else gets the model's iteration time at the emulated device's
// speed and the model's compute demand.
func TestServeEmulatesTheCatalogModel(t *testing.T) {
	var (
		sf  = serveFlags{device: "h200"}
		lg  = &memSink{}
		cat = workload.Default()
	)
	dev, err := sf.capacity()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := core.Lookup("pack")
	srv, err := server.New(server.Config{Policy: p, CapacityMiB: dev.CapacityMiB, Log: lg, Models: catalogModels(cat),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Emulate: &dev})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeFast(l)
	s, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "a", Model: "resnet50", Iterations: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Emulated {
		t.Fatal("open reply does not say emulated")
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := s.End(0, 0); err != nil {
		t.Fatal(err)
	}
	s.Close(true)
	var prof workload.Profile
	for _, q := range cat.Profiles() {
		if q.Model == "resnet50" && q.Kind == workload.Train {
			prof = q
			break
		}
	}
	want := dev.IterS(prof.IterS)
	var start, end, gpu float64
	for _, e := range lg.events() {
		switch e.Kind {
		case eventlog.IterStart:
			start = e.T
		case eventlog.IterEnd:
			end, gpu = e.T, e.GPU
		}
	}
	if math.Abs(gpu-want) > 1e-9 || end-start < want || end-start > want+0.02 {
		t.Errorf("iteration %.1f ms with GPU time %.3f ms; want %.3f ms (resnet50 %.1f ms on the P100, speed %v)",
			1e3*(end-start), 1e3*gpu, 1e3*want, 1e3*prof.IterS, dev.Speed)
	}
}

type memSink struct {
	mu sync.Mutex
	ev []eventlog.Event
}

func (m *memSink) Emit(e eventlog.Event) {
	m.mu.Lock()
	m.ev = append(m.ev, e)
	m.mu.Unlock()
}

func (m *memSink) events() []eventlog.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]eventlog.Event(nil), m.ev...)
}

// TestServeStopsQuicklyWithClientsThatDoNotRead: SIGTERM stops the daemon in
// well under a second even with a fast-path client that never reads its
// replies and an HTTP client that never reads its response.
func TestServeStopsQuicklyWithClientsThatDoNotRead(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	p, _ := core.Lookup("pack")
	var lf limitFlags
	lf.register(&cobra.Command{}) // the defaults
	cfg := server.Config{Policy: p, CapacityMiB: 1000, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := lf.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	// Longer than the test, and a queue that never fills: shutdown must not wait
	// for the clients.
	cfg.WriteTimeout, cfg.ReplyQueue = time.Minute, 64<<20
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveAddrs(ctx, srv, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, addr, sock, "", listenAccess{}, "end")
	}()
	var fast net.Conn
	for i := 0; ; i++ {
		if fast, err = net.Dial("unix", sock); err == nil || i == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	frame := func(body string) []byte {
		return append([]byte{0, 0, 0, byte(len(body))}, body...)
	}
	fast.Write(frame(`{"op":"open","id":1,"version":1,"job":"deaf","persistent_mib":1,"ephemeral_mib":1}`))
	go fast.Write(bytes.Repeat(frame(`{"op":"fly","id":2}`), 20000)) // megabytes of replies, never read
	web, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	// Pipelined requests, never read: megabytes of responses.
	go web.Write(bytes.Repeat([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), 5000))
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	cancel() // what SIGTERM does
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("stopped in %v", time.Since(t0))
	case <-time.After(time.Second):
		t.Fatal("the daemon took more than 1 s to stop")
	}
}

func TestLimitFlags(t *testing.T) {
	for _, args := range [][]string{{"--max-conns", "0"}, {"--write-timeout", "0s"}, {"--max-body-bytes", "-1"}, {"--read-timeout", "-1s"}} {
		var lf limitFlags
		cmd := &cobra.Command{}
		lf.register(cmd)
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		var c server.Config
		if err := lf.apply(&c); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// salus serve --admission: the daemon's policy admits in its own order under
// the bound; wrong values are refused before anything listens.
func TestServeAdmissionFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--admission", "sideways"}, "--admission \"sideways\": choose arrival or policy"},
		{[]string{"--starve-factor", "3"}, "--starve-factor 3 applies to --admission policy only"},
		{[]string{"--admission", "policy", "--starve-factor", "0"}, "--starve-factor 0: give a positive number"},
	} {
		if _, err := run(t, append([]string{"serve", "--socket", "", "--addr", "", "--fast-addr", ""}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("salus serve %v: error %v, want %q", c.args, err, c.want)
		}
	}
	mp := core.DefaultModeParams()
	mp.Admission, mp.StarveFactor = core.AdmitByPolicy, 5
	p, err := (&policyFlag{policy: "srtf"}).lookupWith("serve", mp)
	if err != nil || !p.Admission.ByPolicy || p.Admission.StarveFactor != 5 {
		t.Errorf("srtf with --admission policy --starve-factor 5: %+v, %v", p.Admission, err)
	}
}

// fakeSMI puts an nvidia-smi on PATH that prints out, as nvidia-smi's query does.
func fakeSMI(t *testing.T, out string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake nvidia-smi is a shell script")
	}
	dir := t.TempDir()
	// printf, a shell builtin: PATH holds nothing but the fake.
	script := "#!/bin/sh\nprintf '%s' '" + out + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

// --device auto: the preset of the GPUs --gpus names, as nvidia-smi names them;
// a GPU no preset matches by its own name and memory at speed 1, with a warning;
// GPUs of two models, or one nvidia-smi does not list, refused.
func TestServeDeviceAuto(t *testing.T) {
	fakeSMI(t, "0, NVIDIA A100 80GB PCIe, 81920\n1, NVIDIA A100 80GB PCIe, 81920\n2, NVIDIA GeForce RTX 4090, 24564\n")
	for _, c := range []struct {
		gpus, name, warn, refused string
		mib                       float64
	}{
		{gpus: "2", name: "A100-80GB", mib: 71680},
		{gpus: "2:", name: "NVIDIA GeForce RTX 4090", mib: 24564.0 * 7 / 8, warn: "at speed 1"},
		{gpus: "3", refused: "GPU 0 is a NVIDIA A100 80GB PCIe and GPU 2 a NVIDIA GeForce RTX 4090"},
		{gpus: "4:", refused: "nvidia-smi lists no GPU 4"},
	} {
		sf := serveFlags{device: "auto", gpus: c.gpus}
		dev, err := sf.capacity()
		switch {
		case c.refused != "":
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("--gpus %s: %v, want an error with %q", c.gpus, err, c.refused)
			}
		case err != nil || dev.Name != c.name || dev.CapacityMiB != c.mib:
			t.Errorf("--gpus %s: %+v, %v: want %s with %v MiB", c.gpus, dev, err, c.name, c.mib)
		case c.warn == "" && len(sf.warnings) > 0, c.warn != "" && (len(sf.warnings) != 1 || !strings.Contains(sf.warnings[0], c.warn)):
			t.Errorf("--gpus %s: warnings %q, want %q", c.gpus, sf.warnings, c.warn)
		}
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := (&serveFlags{device: "auto"}).capacity(); err == nil || !strings.Contains(err.Error(), "give its preset with --device") {
		t.Errorf("no nvidia-smi: %v, want an error that says to give --device", err)
	}
}

// serveAddrs opens the listeners of the addresses and serves srv on them, as
// salus serve does (a listener's error shuts srv down).
func serveAddrs(ctx context.Context, srv *server.Server, logger *slog.Logger, file *eventlog.Appender, addr, socket, fastAddr string, acc listenAccess, onStop string) error {
	ls, err := openListeners(addr, socket, fastAddr, acc)
	if err != nil {
		srv.Shutdown()
		return err
	}
	return serve(ctx, srv, logger, file, ls, onStop)
}
