package driver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/k8s/dra"
)

// ConnectDaemon is the node daemon reached over its connect API with the admin
// token: what `salus-dra-driver --daemon` talks to.
type ConnectDaemon struct {
	admin salusv1connect.AdminServiceClient
	// DriverVersion is the GPU driver's version, published as an attribute.
	DriverVersion string
}

// CallTimeout bounds each call to the daemon: the kubelet's own calls time out.
const CallTimeout = 10 * time.Second

// NewConnectDaemon returns the daemon at base (http://127.0.0.1:7070) whose admin
// token is token.
func NewConnectDaemon(base, token string) *ConnectDaemon {
	hc := &http.Client{Timeout: CallTimeout}
	auth := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	})
	return &ConnectDaemon{admin: salusv1connect.NewAdminServiceClient(hc, strings.TrimRight(base, "/"), connect.WithInterceptors(auth))}
}

// GPUs lists the daemon's GPUs with their usable memory (what it schedules),
// named by the daemon's device.
func (c *ConnectDaemon) GPUs(ctx context.Context) ([]dra.GPU, error) {
	lanes, err := c.admin.ListLanes(ctx, connect.NewRequest(&salusv1.ListLanesRequest{}))
	if err != nil {
		return nil, err
	}
	pol, err := c.admin.GetPolicy(ctx, connect.NewRequest(&salusv1.GetPolicyRequest{}))
	if err != nil {
		return nil, err
	}
	var out []dra.GPU
	for _, g := range lanes.Msg.Gpus {
		out = append(out, dra.GPU{Index: int(g.Index), Model: pol.Msg.Device, MemoryMiB: g.CapacityMib, DriverVersion: c.DriverVersion})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the daemon lists no GPU")
	}
	return out, nil
}

// Reserve calls ReserveClaim, with the claim's intent.
func (c *ConnectDaemon) Reserve(ctx context.Context, uid, name string, gpu int, memoryMiB float64, secret string, intent Intent) error {
	_, err := c.admin.ReserveClaim(ctx, connect.NewRequest(&salusv1.ReserveClaimRequest{Claim: uid, Name: name, Gpu: int32(gpu), MemoryMib: memoryMiB, Secret: secret,
		DeclaredS: intent.DeclaredS, Priority: intent.Priority}))
	return unwrap(err)
}

// Release calls ReleaseClaim.
func (c *ConnectDaemon) Release(ctx context.Context, uid string) error {
	_, err := c.admin.ReleaseClaim(ctx, connect.NewRequest(&salusv1.ReleaseClaimRequest{Claim: uid}))
	return unwrap(err)
}

// unwrap keeps the daemon's own words: they end up in the pod's events.
func unwrap(err error) error {
	if ce, ok := err.(*connect.Error); ok {
		return fmt.Errorf("the salus daemon refused: %s", ce.Message())
	}
	return err
}

// NVIDIADriverVersion reads the kernel module's version from
// /proc/driver/nvidia/version ("" when there is none, as on a node without an
// NVIDIA GPU or with an emulating daemon).
func NVIDIADriverVersion() string {
	raw, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..."
	f := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0])
	for i, w := range f {
		if w == "Module" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}
