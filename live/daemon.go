package live

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/server"
)

// DaemonConfig configures a daemon started in this process.
type DaemonConfig struct {
	Policy      core.Policy
	CapacityMiB float64
	// GPUs is how many GPUs of CapacityMiB the node has (0: one), each with its
	// own lanes and, under emulation, its own device model; GPUPlacement orders
	// them for a job (nil: the core's default).
	GPUs         int
	GPUPlacement core.GPUPlacement
	// Emulate, when not nil, is the device the daemon emulates (server.Config.Emulate).
	Emulate *device.Device
	// Grace is the daemon's grace window; 0 keeps its default.
	Grace time.Duration
	// Trace names the trace in the log's run header.
	Trace string
	// Log receives the event log besides the metrics collector; nil: nowhere else.
	Log eventlog.Sink
	// LogPath, when not empty, is a file the event log is also written to (OpenLog).
	LogPath string
	// Logger for the daemon; nil discards its logs.
	Logger *slog.Logger
}

// Daemon is a salus daemon running in this process on a Unix socket in a fresh
// temporary directory, its event log feeding a metrics collector.
type Daemon struct {
	Server *server.Server
	// Addr is the socket's path (what the PyTorch examples' --salus takes);
	// FastAddr is the fast-path address for the Go workers.
	Addr string

	dir       string
	collector *metrics.Collector
	file      *eventlog.File
	serveErr  chan error
}

// OpenLog opens path for a live event log: the one way the live engine writes a
// log file (a name ending in .gz is compressed).
func OpenLog(path string) (*eventlog.File, error) { return eventlog.Create(path) }

// StartDaemon starts a daemon in this process and serves its fast path on a Unix
// socket; Stop ends it.
func StartDaemon(c DaemonConfig) (*Daemon, error) {
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d := &Daemon{collector: metrics.NewCollector(), serveErr: make(chan error, 1)}
	sinks := eventlog.Sinks{d.collector}
	if c.Log != nil {
		sinks = append(sinks, c.Log)
	}
	if c.LogPath != "" {
		f, err := OpenLog(c.LogPath)
		if err != nil {
			return nil, err
		}
		d.file = f
		sinks = append(sinks, f)
	}
	dir, err := os.MkdirTemp("", "salus-live-")
	if err != nil {
		d.cleanup()
		return nil, err
	}
	d.dir, d.Addr = dir, filepath.Join(dir, "salus.sock")
	var gpus []server.GPU
	for i := range c.GPUs {
		gpus = append(gpus, server.GPU{Index: i})
	}
	// Every client of this daemon is one of the run's own workers, on a private
	// socket: one user, who may take every slot (a burst of arrivals waits for
	// admission on as many connections).
	d.Server, err = server.New(server.Config{Policy: c.Policy, CapacityMiB: c.CapacityMiB, Grace: c.Grace,
		Log: &lockedSink{s: sinks}, Logger: c.Logger, Trace: c.Trace, Emulate: c.Emulate, GPUs: gpus, GPUPlacement: c.GPUPlacement,
		MaxConnsPerUser: -1})
	if err != nil {
		d.cleanup()
		return nil, err
	}
	l, err := net.Listen("unix", d.Addr)
	if err != nil {
		d.Server.Shutdown()
		d.cleanup()
		return nil, fmt.Errorf("live: listen on %s: %w", d.Addr, err)
	}
	go func() { d.serveErr <- d.Server.ServeFast(l) }()
	return d, nil
}

// FastAddr is the daemon's fast-path address, unix:PATH.
func (d *Daemon) FastAddr() string { return "unix:" + d.Addr }

// Stop shuts the daemon down and returns the run's results from its event log.
func (d *Daemon) Stop() (metrics.Result, error) {
	d.Server.Shutdown()
	err := <-d.serveErr
	res, rerr := d.collector.Result()
	return res, errors.Join(err, rerr, d.cleanup())
}

func (d *Daemon) cleanup() error {
	var err error
	if d.file != nil {
		err = d.file.Close()
		d.file = nil
	}
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
	return err
}

// WaitNoSessions waits until the daemon has no session left, up to timeout.
func (d *Daemon) WaitNoSessions(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if len(d.Server.Sessions()) == 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return len(d.Server.Sessions()) == 0
}

// lockedSink serializes events: the metrics collector is not safe for concurrent use.
type lockedSink struct {
	mu sync.Mutex
	s  eventlog.Sink
}

func (l *lockedSink) Emit(e eventlog.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s.Emit(e)
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
