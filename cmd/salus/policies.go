package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/exprpolicy"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { registerCommand(32, newPoliciesCmd) }

// policyFiles is --policy-file FILE, repeatable: each file's policy (package
// exprpolicy) is loaded and registered as the flag is parsed, so that --policy
// NAME, resolved when the command runs, finds it whatever the flags' order.
type policyFiles struct{ paths []string }

func (p *policyFiles) String() string { return strings.Join(p.paths, ",") }

func (p *policyFiles) Set(path string) error {
	if _, err := exprpolicy.Register(path); err != nil {
		return err
	}
	p.paths = append(p.paths, path)
	return nil
}

func (p *policyFiles) Type() string { return "FILE" }

// addPolicyFileFlag is --policy-file, on every command that takes --policy.
func addPolicyFileFlag(f *pflag.FlagSet) {
	f.Var(&policyFiles{}, "policy-file", "a policy written as an expression over a job's fields (a YAML file: name, description, order; "+
		"see salus policies and docs/tutorials.md), repeatable; --policy NAME then runs it")
}

// policyFileArgs are --policy-file flags for the policy files loaded, for a
// child process that must know them (salus bench cell).
func policyFileArgs() []string {
	var out []string
	for _, path := range exprpolicy.Paths() {
		out = append(out, "--policy-file", path)
	}
	return out
}

func newPoliciesCmd() *cobra.Command {
	var of outputFlags
	cmd := &cobra.Command{
		Use:   "policies",
		Short: "List the scheduling policies, built in or from --policy-file, and the fields a policy file's order may read",
		Long: `List every scheduling policy: its name (what --policy takes), the sharing mode it runs
in by default, the other modes that run it (--mode), where it comes from (built in, or a
policy file given with --policy-file) and its description; then the fields of a job that
a policy file's order may read.

A policy file is YAML: name, description, order (a CEL expression over the job's
fields, the least value running first, ties to the earlier arrival) and params
(named constants the order may read). See docs/tutorials.md, "Write your own policy
as an expression", and examples/policies/.`,
		Example: `  salus policies
  salus policies --policy-file examples/policies/las2d.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := of.check(); err != nil {
				return err
			}
			type policy struct {
				Name        string   `json:"name"`
				Mode        string   `json:"mode"`
				AlsoIn      []string `json:"also_in"`
				From        string   `json:"from"`
				Description string   `json:"description"`
				Order       string   `json:"order,omitempty"`
				Reads       []string `json:"reads,omitempty"`
			}
			type field struct {
				Name string `json:"name"`
				Type string `json:"type"`
				What string `json:"what"`
			}
			var out struct {
				Policies []policy `json:"policies"`
				Fields   []field  `json:"fields"`
			}
			// The other modes that run each policy, from the registries: what a mode's
			// --mode runs, listed nowhere by hand.
			alsoIn := map[string][]string{}
			for _, s := range core.Schemes() {
				alsoIn[s[1]] = append(alsoIn[s[1]], s[0])
			}
			for _, n := range core.Names() {
				p, err := core.Lookup(n)
				if err != nil {
					return err
				}
				e := policy{Name: n, Mode: p.Mode, From: "built-in", Description: p.Description,
					AlsoIn: slices.DeleteFunc(alsoIn[n], func(m string) bool { return m == p.Mode })}
				if fp, ok := exprpolicy.Lookup(n); ok {
					e.From, e.Order, e.Reads = fp.Path, strings.TrimSpace(fp.Order), fp.Reads
				}
				out.Policies = append(out.Policies, e)
			}
			for _, f := range exprpolicy.Fields() {
				out.Fields = append(out.Fields, field{f.Name, f.Type, f.Doc})
			}
			w := cmd.OutOrStdout()
			if of.format == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "POLICY\tMODE\tALSO IN\tFROM\tDESCRIPTION")
			for _, p := range out.Policies {
				also := strings.Join(p.AlsoIn, ",")
				if also == "" {
					also = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Mode, also, p.From, p.Description)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(w, "\nA policy file's order (--policy-file; docs/tutorials.md) reads these fields of a job; every number is a double:")
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "FIELD\tTYPE\tWHAT")
			for _, f := range out.Fields {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Type, f.What)
			}
			return tw.Flush()
		},
	}
	of.register(cmd, "o", "table", "json")
	addPolicyFileFlag(cmd.Flags())
	return cmd
}
