package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/server"
)

// A job's session with a daemon: Open returns once the job is admitted into a lane;
// each iteration is Begin (wait for the policy's turn), the step, End; Close says the
// job finished. The daemon here is started in this process on a temporary Unix
// socket; against `salus serve` the address is its socket ("unix:/tmp/salus.sock")
// or, with a token, its --fast-addr.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "salus-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "salus.sock")
	policy, _ := core.Lookup("fair")
	d, err := server.New(server.Config{Policy: policy, CapacityMiB: 14 * 1024,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		panic(err)
	}
	go d.ServeFast(l)
	defer d.Shutdown()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := client.Open(ctx, "unix:"+sock, client.Options{
		Job: "resnet50", PersistentMiB: 500, EphemeralMiB: 1500, DeclaredS: 60, Iterations: 3})
	if err != nil {
		panic(err)
	}
	fmt.Printf("admitted into lane %d (%.0f MiB) under %s\n", s.Lane, s.LaneMiB, s.Policy)
	for i := 0; i < 3; i++ {
		if err := s.Begin(); err != nil {
			panic(err)
		}
		start := time.Now()
		// ... one training step ...
		if err := s.End(time.Since(start), 0); err != nil {
			panic(err)
		}
	}
	if err := s.Close(true); err != nil {
		panic(err)
	}
	fmt.Println("closed")
	// Output:
	// admitted into lane 0 (14336 MiB) under fair
	// closed
}

// A daemon of several GPUs names the job's GPUs in its open reply; a job runs
// there by making them its devices before CUDA starts.
func ExampleAdmission_VisibleDevices() {
	a := client.Admission{Session: "ddp", GPUs: []int{1, 3}} // what Open returned, in s.Admission
	fmt.Println("CUDA_VISIBLE_DEVICES=" + a.VisibleDevices())
	// Output: CUDA_VISIBLE_DEVICES=1,3
}
