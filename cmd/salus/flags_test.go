package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commands walks every command of salus, with the arguments that name it.
func commands(cmd *cobra.Command, path []string, visit func(*cobra.Command, []string)) {
	visit(cmd, path)
	for _, c := range cmd.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		commands(c, append(append([]string(nil), path...), c.Name()), visit)
	}
}

// Every flag of every command is in its help, and a flag hidden from the help is a
// deprecated alias: it still works, and says what to use instead.
func TestEveryFlagIsDocumented(t *testing.T) {
	commands(newRoot(), nil, func(cmd *cobra.Command, path []string) {
		if cmd.DisableFlagParsing || !cmd.Runnable() {
			return // salus worker parses its own flags (its help prints them)
		}
		help, err := run(t, append(path, "--help")...)
		if err != nil {
			t.Errorf("salus %v --help: %v", path, err)
			return
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch {
			case f.Hidden && f.Deprecated == "":
				t.Errorf("salus %v: --%s is hidden but not deprecated", path, f.Name)
			case f.Hidden:
				if strings.Contains(help, "--"+f.Name+" ") {
					t.Errorf("salus %v: deprecated --%s is in the help", path, f.Name)
				}
			case strings.TrimSpace(f.Usage) == "":
				t.Errorf("salus %v: --%s has no help text", path, f.Name)
			case !strings.Contains(help, "--"+f.Name+" "):
				t.Errorf("salus %v: --%s is not in the help:\n%s", path, f.Name, help)
			}
		})
	})
}

// The printing format is --format (short -o) on every command that prints results
// in more than one format; -o means nothing else, but for trace gen's deprecated file.
func TestOneFormatFlag(t *testing.T) {
	commands(newRoot(), nil, func(cmd *cobra.Command, path []string) {
		fs := cmd.LocalFlags()
		// replay.go registers its own --format (without -o) until it takes outputFlags;
		// trace import's and trace cluster's --format is the format of the file it reads.
		if f := fs.Lookup("format"); f != nil && f.Shorthand != "o" && !slices.Contains([]string{"trace gen", "replay", "trace import", "trace cluster"}, strings.Join(path, " ")) {
			t.Errorf("salus %v: --format has no -o", path)
		}
		if f := fs.ShorthandLookup("o"); f != nil && f.Name != "format" && f.Deprecated == "" {
			t.Errorf("salus %v: -o is --%s, not --format", path, f.Name)
		}
		if f := fs.Lookup("output"); f != nil && f.Deprecated == "" {
			t.Errorf("salus %v: --output is not deprecated", path)
		}
	})
}

// flagCase gives a flag to a command: it changes the output from base's, or it is
// refused with refused in the error.
type flagCase struct {
	flag    string
	base    []string
	args    []string
	refused string
}

// checkFlagCase runs salus with args, c's flag given, and wants it refused as c
// says, or its output to differ from base's.
func checkFlagCase(t *testing.T, c flagCase, args []string, base string) {
	t.Helper()
	out, err := run(t, args...)
	switch {
	case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "--"+c.flag)):
		t.Errorf("salus %v: error %v, want one naming --%s with %q", args, err, c.flag, c.refused)
	case c.refused == "" && err != nil:
		t.Errorf("salus %v: %v", args, err)
	case c.refused == "" && out == base:
		t.Errorf("salus %v printed the same as without %v: --%s does nothing", args, c.args, c.flag)
	}
}

// checkFlagCases runs the cases, and fails unless every flag of the command
// (but help and deprecated aliases) has one.
func checkFlagCases(t *testing.T, path []string, cases []flagCase) {
	t.Helper()
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.flag] = true
		base, err := run(t, append(append([]string(nil), path...), c.base...)...)
		if err != nil {
			t.Errorf("salus %v %v: %v", path, c.base, err)
			continue
		}
		checkFlagCase(t, c, append(append(append([]string(nil), path...), c.base...), c.args...), base)
	}
	cmd, _, err := newRoot().Find(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && f.Deprecated == "" && !covered[f.Name] {
			t.Errorf("salus %v --%s: no case says what it does or that it is refused", path, f.Name)
		}
	})
}

func TestSimulateFlagsActOrAreRefused(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(trace, []byte("job_id,model,batch_size,iterations,arrival_s\na,alexnet,25,300,0\nb,resnet50,50,200,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(dir, "own.yaml")
	if err := os.WriteFile(catalog, []byte(ownCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	clusterFile := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(clusterFile, []byte("shapes:\n  - {count: 1, gpus: 1, model: p100}\n  - {count: 1, gpus: 2, model: a100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	onCluster := []string{"--cluster", clusterFile, "--policy", "pack", "--load", "8"}
	mine := writePolicyFile(t, dir, "mine", "memory * remaining")
	typo := writePolicyFile(t, dir, "typo", "memory * remainin")
	ts := []string{"--policy", "fifo", "--mode", "timeslice"}
	tsRule := append(slices.Clone(ts), "--interference", "rule")
	mps := []string{"--policy", "fifo", "--mode", "mps", "--load", "3"}
	sus := []string{"--policy", "fair", "--mode", "suspend"}
	srtf4 := []string{"--policy", "srtf", "--load", "4"}
	checkFlagCases(t, []string{"simulate"}, []flagCase{
		{flag: "trace", args: []string{"--trace", trace}},
		{flag: "seed", args: []string{"--seed", "2"}},
		{flag: "seed", base: []string{"--trace", trace}, args: []string{"--seed", "2"}, refused: "add --resample"},
		{flag: "load", args: []string{"--load", "2"}},
		{flag: "load", base: []string{"--trace", trace}, args: []string{"--load", "2"}},
		{flag: "load", base: []string{"--trace", trace}, args: []string{"--load", "-1"}, refused: "positive factor"},
		{flag: "resample", base: []string{"--trace", trace}, args: []string{"--resample", "jitter", "--seed", "3"}},
		{flag: "resample", base: []string{"--trace", trace}, args: []string{"--resample", "shuffle", "--seed", "3"}, refused: "choose bootstrap"},
		{flag: "resample", args: []string{"--resample", "bootstrap"}, refused: "draws from a trace file"},
		{flag: "trace-kind", args: []string{"--trace-kind", "salus100"}},
		{flag: "trace-kind", args: []string{"--trace-kind", "philly"}, refused: "unknown trace kind"},
		{flag: "trace-kind", base: []string{"--trace", trace}, args: []string{"--trace-kind", "salus100"}, refused: "does nothing to the trace file"},
		{flag: "startup-on-gpu", base: []string{"--policy", "srtf"}, args: []string{"--startup-on-gpu"}},
		{flag: "device", args: []string{"--device", "v100"}},
		{flag: "capacity-mib", args: []string{"--capacity-mib", "30000"}},
		{flag: "iter-overhead", args: []string{"--iter-overhead", "0.01"}},
		{flag: "switch-cost", args: []string{"--switch-cost", "0.5"}},
		{flag: "jobs", args: []string{"--jobs", filepath.Join(dir, "jobs.csv")}},
		{flag: "per-iteration", base: []string{"--events", filepath.Join(dir, "e.jsonl")}, args: []string{"--per-iteration"}},
		{flag: "per-iteration", args: []string{"--per-iteration"}, refused: "give --events FILE"},
		{flag: "speed", args: []string{"--speed", "2"}},
		{flag: "interference", base: []string{"--policy", "pack", "-o", "json"}, args: []string{"--interference", "rule"}},
		{flag: "interference", args: []string{"--interference", filepath.Join(dir, "none.json")}, refused: "none.json"},
		{flag: "gpus", args: []string{"--gpus", "2"}},
		{flag: "gpus", args: []string{"--gpus", "0"}, refused: "a node has 1 to"},
		{flag: "gpu-placement", base: []string{"--gpus", "3", "--policy", "pack", "--load", "3"}, args: []string{"--gpu-placement", "first-fit"}},
		{flag: "gpu-placement", args: []string{"--gpu-placement", "worst"}, refused: "unknown GPU placement"},
		{flag: "slice", base: tsRule, args: []string{"--slice", "0.0005"}},
		{flag: "slice", base: ts, args: []string{"--slice", "0.0005"}, refused: "--interference rule"},
		{flag: "slice", args: []string{"--slice", "0.0005"}, refused: "timeslice mode only"},
		{flag: "context-switch", base: tsRule, args: []string{"--context-switch", "0.001"}},
		{flag: "context-switch", base: ts, args: []string{"--context-switch", "0.001"}, refused: "--interference rule"},
		{flag: "context-switch", args: []string{"--context-switch", "0.001"}, refused: "timeslice mode only"},
		{flag: "context-mib", base: ts, args: []string{"--context-mib", "1000"}},
		{flag: "context-mib", args: []string{"--context-mib", "1000"}, refused: "timeslice mode only"},
		{flag: "mps-context-mib", base: mps, args: []string{"--mps-context-mib", "1500"}},
		{flag: "mps-context-mib", args: []string{"--mps-context-mib", "1500"}, refused: "mps mode only"},
		{flag: "mps-clients", base: mps, args: []string{"--mps-clients", "2"}},
		{flag: "mps-clients", args: []string{"--mps-clients", "2"}, refused: "mps mode only"},
		{flag: "pcie-gbps", base: sus, args: []string{"--pcie-gbps", "0.5"}},
		{flag: "pcie-gbps", args: []string{"--pcie-gbps", "0.5"}, refused: "suspend mode only"},
		{flag: "suspend-quantum", base: sus, args: []string{"--suspend-quantum", "1"}},
		{flag: "suspend-quantum", args: []string{"--suspend-quantum", "1"}, refused: "suspend mode only"},
		{flag: "admission", base: srtf4, args: []string{"--admission", "policy"}},
		{flag: "admission", args: []string{"--admission", "sideways"}, refused: "choose arrival or policy"},
		{flag: "starve-factor", base: append(srtf4, "--admission", "policy"), args: []string{"--starve-factor", "2"}},
		{flag: "starve-factor", args: []string{"--starve-factor", "3"}, refused: "applies to --admission policy only"},
		{flag: "starve-factor", base: append(srtf4, "--admission", "policy"), args: []string{"--starve-factor", "-1"}, refused: "give a positive number"},
		{flag: "migrate", base: append(srtf4, "--gpus", "4"), args: []string{"--migrate"}},
		{flag: "gpu-placement", base: append(srtf4, "--gpus", "4"), args: []string{"--gpu-placement", "least-work"}},
		{flag: "policy", args: []string{"--policy", "srtf"}},
		{flag: "policy", args: []string{"--policy", "srtf,fifo"}, refused: "runs one policy"},
		{flag: "mode", base: []string{"--policy", "fifo"}, args: []string{"--mode", "mps"}},
		{flag: "policy-file", args: []string{"--policy-file", mine, "--policy", "mine"}},
		{flag: "policy-file", args: []string{"--policy-file", typo, "--policy", "typo"}, refused: "typo.yaml:2:17: field order: undeclared reference to 'remainin'"},
		{flag: "format", args: []string{"--format", "json"}},
		{flag: "format", args: []string{"-o", "csv"}},
		{flag: "format", args: []string{"--format", "yaml"}, refused: "choose table, json, csv"},
		{flag: "events", args: []string{"--events", filepath.Join(dir, "e.jsonl")}},
		{flag: "catalog", base: []string{"--trace", trace}, args: []string{"--catalog", catalog}},
		{flag: "cluster", args: []string{"--cluster", clusterFile}},
		{flag: "cluster", args: []string{"--cluster", clusterFile, "--gpus", "2"}, refused: "leave out --gpus"},
		{flag: "cluster", args: []string{"--cluster", filepath.Join(dir, "none.yaml")}, refused: "cluster"},
		{flag: "node-placement", base: onCluster, args: []string{"--node-placement", "first-fit"}},
		{flag: "node-placement", args: []string{"--node-placement", "fgd"}, refused: "give --cluster FILE"},
		{flag: "node-placement", base: onCluster, args: []string{"--node-placement", "random"}, refused: "unknown node placement"},
	})
}

// ownCatalog overrides resnet50 at batch 50: a trace of it takes longer.
const ownCatalog = "profiles:\n  - {model: resnet50, batch_size: 50, iter_s: 1.5, persistent_mib: 1000, ephemeral_mib: 4000}\n"

func TestTraceFlagsActOrAreRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.csv")
	if _, err := run(t, "trace", "gen", "--out", file); err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(t.TempDir(), "own.yaml")
	if err := os.WriteFile(catalog, []byte(ownCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	checkFlagCases(t, []string{"trace", "stats"}, []flagCase{
		{flag: "catalog", args: []string{file, "--catalog", catalog}},
		{flag: "seed", args: []string{"--seed", "2"}},
		{flag: "seed", args: []string{file, "--seed", "2"}, refused: "does nothing to the trace file"},
		{flag: "load", args: []string{"--load", "2"}},
		{flag: "load", args: []string{file, "--load", "2"}},
		{flag: "trace-kind", args: []string{"--trace-kind", "salus100"}},
		{flag: "trace-kind", args: []string{file, "--trace-kind", "salus100"}, refused: "does nothing to the trace file"},
		{flag: "format", args: []string{"-o", "json"}},
	})
	checkFlagCases(t, []string{"trace", "gen"}, []flagCase{
		{flag: "kind", args: []string{"--kind", "nope"}, refused: "nope"},
		{flag: "seed", args: []string{"--seed", "2"}},
		{flag: "jobs", args: []string{"--jobs", "3"}},
		{flag: "load", args: []string{"--load", "2"}},
		{flag: "format", args: []string{"--format", "jsonl"}},
		{flag: "out", args: []string{"--out", filepath.Join(t.TempDir(), "x.csv")}},
	})
	checkFlagCases(t, []string{"models"}, []flagCase{{flag: "format", args: []string{"-o", "json"}}, {flag: "catalog", args: []string{"--catalog", catalog}}})
	// The old names keep working.
	for _, args := range [][]string{{"trace", "gen", "-o", file}, {"trace", "gen", "--output", file}, {"trace", "stats", "--trace", file}, {"simulate", "--log", filepath.Join(t.TempDir(), "e.jsonl")}} {
		if out, err := run(t, args...); err != nil || !strings.Contains(out, "deprecated") {
			t.Errorf("salus %v: %v, want it to work and say it is deprecated:\n%s", args, err, out)
		}
	}
}

// eval refuses what none of its runs would read.
func TestEvalRefusesModeAndSuiteFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "fifo", "--slice", "0.01"}, "--slice applies to the timeslice mode only"},
		{[]string{"--mode", "salus", "--mps-clients", "3"}, "--mps-clients applies to the mps mode only"},
		{[]string{"--suite", "tuning", "--suspend-quantum", "3"}, "--suspend-quantum applies to the suspend mode only"},
		{[]string{"--suite", "tuning", "--policy", "fifo"}, "--policy applies to the training, paper and overhead suites (and all) only"},
		{[]string{"--suite", "inference", "--mode", "salus"}, "--mode applies to the training and paper suites (and all) only"},
		{[]string{"--suite", "overhead", "--engine", "live", "--speed", "2"}, "--speed is a parameter of the simulator's device model"},
		{[]string{"--engine", "live", "--trace", "x", "--context-mib", "9"}, "--context-mib applies to the timeslice mode only"},
		{[]string{"--suite", "inference", "--slice", "0.01"}, "--slice applies to the timeslice mode only"},
		{[]string{"--suite", "all", "--policy", "fifo", "--pcie-gbps", "2"}, "--pcie-gbps applies to the suspend mode only"},
		{[]string{"--switch-cost", "-1"}, "--switch-cost -1"},
	} {
		_, err := run(t, append([]string{"eval"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("eval %v: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := run(t, "eval", "--policy", "fifo", "--mode", "timeslice", "--slice", "0.01", "--interference", "rule", "-o", "json"); err != nil {
		t.Errorf("--slice under timeslice and today's rule: %v", err)
	}
	if _, err := run(t, "eval", "--policy", "fifo", "--mode", "timeslice", "--slice", "0.01", "-o", "json"); err == nil || !strings.Contains(err.Error(), "--interference rule") {
		t.Errorf("--slice under timeslice and the co-location model: %v, want it refused", err)
	}
}

// --policy takes commas and repeats wherever it takes a list.
func TestSweepPolicyTakesCommasAndRepeats(t *testing.T) {
	var outs []string
	for _, p := range [][]string{{"--policy", "fifo,srtf"}, {"--policy", "fifo", "--policy", "srtf"}} {
		args := append([]string{"sweep", "--seeds", "1", "--load", "1", "--jobs", "4", "--workers", "1", "--out", t.TempDir()}, p...)
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out, "fifo") || !strings.Contains(out, "srtf") {
			t.Errorf("%v: no fifo and srtf rows:\n%s", args, out)
		}
		outs = append(outs, out[:strings.Index(out, "\n\n")])
	}
	if outs[0] != outs[1] {
		t.Errorf("commas and repeats differ:\n%s\n%s", outs[0], outs[1])
	}
}

// serve's journal flags without a journal, and a list of policies, are refused
// before the daemon starts.
func TestServeRefusesWhatDoesNothing(t *testing.T) {
	off := []string{"serve", "--socket", "", "--fast-addr", "", "--addr", ""}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--recover-window", "1s"}, "--recover-window applies to the event log"},
		{[]string{"--events-flush", "1s"}, "--events-flush applies to the event log"},
		{[]string{"--on-journal-error", "continue"}, "--on-journal-error applies to the event log"},
		{[]string{"--events-rotate-mib", "8"}, "--events-rotate-mib applies to the event log"},
		{[]string{"--max-recovered", "10"}, "--max-recovered applies to the event log"},
		{[]string{"--continue-events"}, "--continue-events applies to the event log"},
		{[]string{"--events", filepath.Join(t.TempDir(), "e.jsonl"), "--on-journal-error", "maybe"}, `--on-journal-error "maybe": use stop`},
		{[]string{"--events", filepath.Join(t.TempDir(), "e.jsonl"), "--events-rotate-mib", "-1"}, "give 0 or more"},
		{[]string{"--policy", "srtf,pack"}, "salus serve runs one policy"},
	} {
		_, err := run(t, append(off, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: %v, want %q", c.args, err, c.want)
		}
	}
}
