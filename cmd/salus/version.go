package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() { registerCommand(110, newVersionCmd) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version, the commit and the Go version the binary was built from",
		Long: `Print what the binary was built from: the module version (a release tag, or "devel" for a
build of a working tree), the VCS commit with "+dirty" when the tree had uncommitted
changes, and the Go version and platform. The same as salus --version.

A commit is recorded by go build and go install in a git checkout (not by go run, go test,
or -buildvcs=false).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

// versionLine is what salus version and salus --version print.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	return "salus " + buildVersion(info, ok) + " " + goVersion(info, ok)
}

// moduleVersion is this binary's buildVersion, for the report's page.
func moduleVersion() string { return buildVersion(debug.ReadBuildInfo()) }

// buildVersion is the module version and commit the binary was built from: the
// module's release version when it has one, else "devel"; then the commit's first
// 12 hex digits in parentheses, with "+dirty" when the working tree had changes,
// when the build recorded one.
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "devel"
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	short := rev[:min(12, len(rev))]
	v := strings.TrimSuffix(info.Main.Version, "+dirty")
	// A build of a checkout carries "(devel)" or, since Go 1.24, a pseudo-version
	// that ends in the commit (v0.0.0-TIME-COMMIT): neither is a release.
	if v == "" || v == "(devel)" || (short != "" && strings.HasSuffix(v, "-"+short)) {
		v = "devel"
	}
	if short != "" {
		v += " (" + short
		if dirty {
			v += "+dirty"
		}
		v += ")"
	}
	return v
}

// goVersion is the Go toolchain and platform the binary was built with.
func goVersion(info *debug.BuildInfo, ok bool) string {
	gv := runtime.Version()
	if ok && info != nil && info.GoVersion != "" {
		gv = info.GoVersion
	}
	return gv + " " + runtime.GOOS + "/" + runtime.GOARCH
}
