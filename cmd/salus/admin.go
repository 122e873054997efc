package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/protocol"
)

func init() {
	registerCommand(90, newSessionsCmd)
	registerCommand(91, newEvictCmd)
	registerCommand(92, newDrainCmd)
}

// adminFlags reach a daemon's connect API as an admin.
type adminFlags struct {
	addr      string
	tokenFile string
}

func (a *adminFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&a.addr, "addr", "127.0.0.1:7070", "the daemon's connect API: HOST:PORT (--addr of salus serve), or unix:PATH (its --api-socket, where the daemon's user and root need no token)")
	f.StringVar(&a.tokenFile, "admin-token-file", "", "file of the daemon's admin token (default "+fmt.Sprintf(tokenPathHelp, "admin-token")+")")
}

// client returns the admin client, and a context that bounds the call.
func (a *adminFlags) client(cmd *cobra.Command) (salusv1connect.AdminServiceClient, context.Context, context.CancelFunc, error) {
	hc, base := http.DefaultClient, "http://"+a.addr
	path, isUnix := strings.CutPrefix(a.addr, "unix:")
	if isUnix {
		var d net.Dialer
		hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}}}
		base = "http://salus"
	}
	file := a.tokenFile
	if file == "" {
		file = defaultTokenPath("admin-token", protocol.DefaultSocket())
	}
	var opts []connect.ClientOption
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(b))
		// Over the API socket the daemon's user and root need no token: a token
		// file left in the default place by another daemon (a stale one) must not
		// lock them out. The daemon refuses an unknown token before it looks at
		// the caller's uid, so the call is made again without it.
		retryBare := isUnix && a.tokenFile == ""
		opts = append(opts, connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				req.Header().Set("Authorization", "Bearer "+tok)
				res, err := next(ctx, req)
				if retryBare && connect.CodeOf(err) == connect.CodeUnauthenticated {
					req.Header().Del("Authorization")
					bare, err2 := next(ctx, req)
					switch {
					case err2 == nil:
						fmt.Fprintf(cmd.ErrOrStderr(), "salus: the admin token in %s is not this daemon's (left by another daemon?): called as uid %d over %s instead\n", file, os.Getuid(), path)
						return bare, nil
					case connect.CodeOf(err2) != connect.CodeUnauthenticated:
						return bare, err2 // what the daemon says of this uid
					}
				}
				return res, err
			}
		})))
	case isUnix && a.tokenFile == "" && errors.Is(err, fs.ErrNotExist):
		// Over the API socket the daemon's user and root need no token.
	default:
		return nil, nil, nil, fmt.Errorf("--admin-token-file: %w (the daemon creates it at start: give its path, or run as the daemon's user over --addr unix:PATH of its --api-socket)", err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	return salusv1connect.NewAdminServiceClient(hc, base, opts...), ctx, cancel, nil
}

// call runs fn with the admin client, within the call's time bound.
func (a *adminFlags) call(cmd *cobra.Command, fn func(c salusv1connect.AdminServiceClient, ctx context.Context) error) error {
	c, ctx, cancel, err := a.client(cmd)
	if err != nil {
		return err
	}
	defer cancel()
	return fn(c, ctx)
}

func newSessionsCmd() *cobra.Command {
	var (
		a  adminFlags
		of outputFlags
	)
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List a running daemon's sessions (admin): salus get sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := of.check(); err != nil {
				return err
			}
			return a.call(cmd, func(c salusv1connect.AdminServiceClient, ctx context.Context) error {
				return printSessions(cmd.OutOrStdout(), c, ctx, of.format, func(err error) error {
					return fmt.Errorf("list sessions at %s: %w", a.addr, err)
				})
			})
		},
	}
	a.register(cmd)
	registerGetOutput(cmd, &of)
	return cmd
}

func newEvictCmd() *cobra.Command {
	var (
		a      adminFlags
		reason string
	)
	cmd := &cobra.Command{
		Use:   "evict JOB",
		Short: "End a job's session on a running daemon: its memory goes back, its client is told (admin)",
		Long: `End a job's session on a running daemon (admin). The session is logged as lost with
reason "evicted by WHO", its lane memory goes back to the device for waiting jobs, and
its client is told with code evicted (the Go and Python clients end the session).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.call(cmd, func(c salusv1connect.AdminServiceClient, ctx context.Context) error {
				res, err := c.EvictSession(ctx, connect.NewRequest(&salusv1.EvictSessionRequest{Job: args[0], Reason: reason}))
				if err != nil {
					return fmt.Errorf("evict %q at %s: %w", args[0], a.addr, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "job %s: %s; %.0f MiB of device memory free\n", args[0], res.Msg.Reason, res.Msg.FreeMib)
				return nil
			})
		},
	}
	a.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why, appended to the reason logged and told to the client")
	return cmd
}

func newDrainCmd() *cobra.Command {
	var (
		a      adminFlags
		resume bool
	)
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Stop a running daemon from admitting jobs; running jobs finish (admin)",
		Long: `Drain a running daemon (admin): it admits no new job. New opens, and the jobs still
waiting for admission, are refused with code draining; admitted jobs carry on to their
end. salus drain --resume admits again. GetStats (and /metrics' salus_draining) show it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd, func(c salusv1connect.AdminServiceClient, ctx context.Context) error {
				res, err := c.Drain(ctx, connect.NewRequest(&salusv1.DrainRequest{Resume: resume}))
				if err != nil {
					return fmt.Errorf("drain %s: %w", a.addr, err)
				}
				if !res.Msg.Draining {
					fmt.Fprintln(cmd.OutOrStdout(), "admitting jobs again")
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "draining: no new job is admitted; %d sessions carry on, %d waiting jobs refused\n", res.Msg.Sessions, res.Msg.Refused)
				return nil
			})
		},
	}
	a.register(cmd)
	cmd.Flags().BoolVar(&resume, "resume", false, "end the drain: admit jobs again")
	return cmd
}
