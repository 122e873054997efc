package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// The CLI reference, docs/cli/*.md, is generated from the cobra commands by a
// hidden command:
//
//	go run ./cmd/salus gen-docs docs/cli
//
// TestCLIReferenceIsCurrent regenerates it into a temporary directory and fails,
// naming that command, when the committed pages differ.

//go:generate go run . gen-docs ../../docs/cli

// genDocsCommand is the command that regenerates the CLI reference, from the
// repository's root.
const genDocsCommand = "go run ./cmd/salus gen-docs docs/cli"

func init() {
	registerCommand(200, newGenDocsCmd) // hidden: last
}

func newGenDocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write the CLI reference (Markdown, one page a command) into DIR, and refresh the generated sections of the pages of DIR's parent",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := genDocs(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d pages to %s\n", n, args[0])
			pages, err := refreshSections(filepath.Dir(filepath.Clean(args[0])))
			if err != nil {
				return err
			}
			if len(pages) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "refreshed the generated sections of %s\n", strings.Join(pages, ", "))
			}
			return nil
		},
	}
}

// genDocs writes one Markdown page per visible command of a fresh root command
// into dir, removing the pages of commands that are gone, and returns how many
// it wrote. The pages carry no date and nothing of this machine, so that the same code
// gives the same pages anywhere.
func genDocs(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return 0, err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return 0, err
		}
	}
	root := newRoot()
	var prep func(c *cobra.Command)
	prep = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		c.Flags().VisitAll(portableDefault)
		c.PersistentFlags().VisitAll(portableDefault)
		for _, s := range c.Commands() {
			prep(s)
		}
	}
	prep(root)
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return 0, err
	}
	pages, err := filepath.Glob(filepath.Join(dir, "*.md"))
	return len(pages), err
}

// portableDefault writes a flag's default as it reads on every machine: a
// default taken from this machine (sweep's --workers, its CPUs) is named, not
// given.
func portableDefault(f *pflag.Flag) {
	if f.Name == "workers" && f.DefValue == strconv.Itoa(runtime.NumCPU()) {
		f.DefValue = "the number of CPUs"
	}
}
