package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/salusgo/salus/sweep"
)

// A sweep run as 3 shards and merged writes byte for byte the sweep.json and
// sweep.csv of one sweep over the whole grid; a merge that lacks a shard says
// which runs are missing and from which shard.
func TestSweepShardsMergeToOneSweep(t *testing.T) {
	dir := t.TempDir()
	grid := []string{"sweep", "--seeds", "2", "--load", "1,2", "--jobs", "4", "--policy", "fifo,pack", "--workers", "2", "--trace-kind", "paper,salus100"}
	at := func(name string) string { return filepath.Join(dir, name) }
	if out, err := run(t, append(grid, "--out", at("one"))...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for i, shard := range []string{"0/3", "1/3", "2/3"} {
		if out, err := run(t, append(grid, "--shard", shard, "--out", at("s"+string(rune('0'+i))))...); err != nil {
			t.Fatalf("shard %s: %v\n%s", shard, err, out)
		}
	}
	if out, err := run(t, "sweep", "merge", at("s0"), at("s1"), at("s2"), "--out", at("merged")); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	// Byte for byte but for the command that wrote them: the merge's, with the
	// shards' as its parts, against the one sweep's.
	for _, f := range []string{"sweep.json", "sweep.csv"} {
		a, err1 := os.ReadFile(filepath.Join(at("one"), f))
		b, err2 := os.ReadFile(filepath.Join(at("merged"), f))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		a, b = withoutCommand(t, f, a), withoutCommand(t, f, b)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the merged shards differ from one sweep:\n%s\n%s", f, a, b)
		}
	}
	_, err := run(t, "sweep", "merge", at("s0"), at("s2"), "--out", at("partial"))
	if err == nil || !strings.Contains(err.Error(), "shard 1/3") {
		t.Errorf("merging without shard 1: %v, want the missing runs named with their shard", err)
	}
	if _, err := run(t, append(grid, "--shard", "3/3", "--out", at("bad"))...); err == nil || !strings.Contains(err.Error(), "0 <= I < N") {
		t.Errorf("--shard 3/3: %v", err)
	}
}

// withoutCommand is sweep.json or sweep.csv without the commands of its
// provenance.
func withoutCommand(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	if name == "sweep.json" {
		var r sweep.Result
		if err := json.Unmarshal(b, &r); err != nil || r.Grid.Provenance == nil {
			t.Fatalf("%s: %v, provenance %v", name, err, r.Grid.Provenance)
		}
		r.Grid.Provenance.Command, r.Grid.Provenance.Parts = nil, nil
		out, _ := json.Marshal(r)
		return out
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) == 0 || rows[0][len(rows[0])-1] != "command" {
		t.Fatalf("%s: %v, want its last column the command", name, err)
	}
	var out bytes.Buffer
	w := csv.NewWriter(&out)
	for _, r := range rows {
		w.Write(r[:len(r)-1])
	}
	w.Flush()
	return out.Bytes()
}

// --trace-kind sweeps every generated kind, a cell each, named in the table,
// sweep.csv and sweep.json; the table shows the GPUs, the seeds and the
// interval's method; --metrics and --schemes choose what is drawn; names the
// sweep does not have are refused, naming what it has.
func TestSweepTraceKindsAndFigures(t *testing.T) {
	out := t.TempDir()
	stdout, err := run(t, "sweep", "--trace-kind", "paper,salus100", "--seeds", "2", "--load", "1", "--jobs", "6", "--policy", "fifo,srtf",
		"--gpus", "2", "--workers", "2", "--out", out, "--metrics", "avg_jct_s,makespan_s", "--schemes", "srtf")
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	head := strings.SplitN(stdout, "\n", 2)[0]
	for _, want := range []string{"trace", "GPUs", "runs"} {
		if !strings.Contains(head, want) {
			t.Errorf("the table's head lacks %q: %s", want, head)
		}
	}
	rows := map[string]int{}
	for _, l := range strings.Split(stdout, "\n")[1:5] {
		f := strings.Fields(l)
		if len(f) < 7 || f[5] != "2" {
			t.Errorf("row %q: want the trace first and 2 GPUs in the sixth column", l)
			continue
		}
		rows[f[0]]++
	}
	if rows["paper"] != 2 || rows["salus100"] != 2 {
		t.Errorf("rows by trace %v, want 2 paper and 2 salus100:\n%s", rows, stdout)
	}
	for _, want := range []string{"across 2 seeds: BCa bootstrap", "paper, load 1, 14.0 GiB, GPUs 2: ", "salus100, load 1, 14.0 GiB, GPUs 2: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output lacks %q:\n%s", want, stdout)
		}
	}
	var res sweep.Result
	if b, err := os.ReadFile(filepath.Join(out, "sweep.json")); err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("sweep.json: %v", err)
	}
	if len(res.Cells) != 4 || res.Cells[0].Kind != "paper" || res.Cells[2].Kind != "" || !strings.Contains(res.Interval, "BCa") {
		t.Errorf("sweep.json cells %+v, interval %q: want paper's two, then salus100's (kind empty), and the method", res.Cells, res.Interval)
	}
	if a, b := res.Cells[0].Metrics["avg_jct_s"].Mean, res.Cells[2].Metrics["avg_jct_s"].Mean; a == b {
		t.Errorf("fifo's average JCT %v on both kinds: the same trace ran", a)
	}
	pngs, _ := filepath.Glob(filepath.Join(out, "sweep-*.png"))
	if len(pngs) != 2 {
		t.Errorf("figures %v: want avg_jct and makespan alone", pngs)
	}
	index, _ := os.ReadFile(filepath.Join(out, "index.html"))
	if !strings.Contains(string(index), "average JCT at load 1") {
		t.Errorf("index.html has no bar chart of the average JCT at load 1")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace-kind", "philly"}, `unknown trace kind "philly": choose paper, salus100`},
		{[]string{"--metrics", "speed"}, "--metrics speed: no such metric; choose from avg_jct_s"},
		{[]string{"--policy", "fifo", "--schemes", "pack"}, "--schemes pack: the sweep ran no such scheme; it ran fifo, fifo/exclusive"},
		{[]string{"--resume", out, "--trace-kind", "paper"}, "leave out --trace-kind"},
	} {
		args := append([]string{"sweep", "--seeds", "1", "--load", "1", "--jobs", "3", "--workers", "1", "--out", t.TempDir()}, c.args...)
		if c.args[0] == "--resume" {
			args = append([]string{"sweep"}, c.args...)
		}
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sweep %v: %v, want %q", c.args, err, c.want)
		}
	}
}

// The README's quick-start sweep (its trace gen and sweep commands, as they
// are written there) reports no confidence bound below zero: every metric is
// positive, and every interval lies within its mean's seeds. With the former
// symmetric t-interval this sweep had lower bounds below zero (logged).
func TestReadmeQuickStartSweepHasNoNegativeBound(t *testing.T) {
	var cmds [][]string
	for _, b := range readmeQuickStarts(t) {
		for _, l := range b.lines {
			l, _, _ = strings.Cut(l, " #")
			if f := strings.Fields(l); len(f) > 2 && f[0] == "salus" && (f[1] == "sweep" || f[1] == "trace" && f[2] == "gen") {
				cmds = append(cmds, f[1:])
			}
		}
	}
	if len(cmds) != 2 || cmds[1][0] != "sweep" {
		t.Fatalf("the README's quick starts have the commands %q: want a trace gen, then a sweep", cmds)
	}
	t.Chdir(t.TempDir())
	for _, c := range cmds {
		if out, err := run(t, c...); err != nil {
			t.Fatalf("salus %s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	dir := cmds[1][len(cmds[1])-1] // --out DIR, last
	f, err := os.Open(filepath.Join(dir, sweep.CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("sweep.csv: %d lines, %v", len(recs), err)
	}
	head, bounds := recs[0], 0
	for _, row := range recs[1:] {
		for i, h := range head {
			m, ok := strings.CutSuffix(h, "_low")
			if !ok || row[i] == "" {
				continue
			}
			num := func(col string) float64 {
				for j, hh := range head {
					if hh == col {
						v, err := strconv.ParseFloat(row[j], 64)
						if err != nil {
							t.Fatalf("sweep.csv %s: %q", col, row[j])
						}
						return v
					}
				}
				t.Fatalf("sweep.csv has no %s column", col)
				return 0
			}
			lo, mean, hi := num(m+"_low"), num(m+"_mean"), num(m+"_high")
			if math.IsNaN(mean) {
				continue
			}
			bounds++
			if lo < 0 || !(lo <= mean && mean <= hi) {
				t.Errorf("%s/%s load %s: %s = %v [%v, %v]: a bound below zero, or an interval without its mean", row[0], row[1], row[2], m, mean, lo, hi)
			}
		}
	}
	if bounds < 9*4*3 {
		t.Errorf("%d bounds checked, want every metric of 4 policies at 3 loads", bounds)
	}
	// What the former method said on the same runs.
	_, samples, err := sweep.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string][]float64{}
	for _, s := range samples {
		for k, v := range s.Metrics {
			key := s.Cell.String() + " " + k
			by[key] = append(by[key], v)
		}
	}
	negative := 0
	for _, xs := range by {
		n := float64(len(xs))
		var m, ss float64
		for _, x := range xs {
			m += x / n
		}
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		if n > 1 && m-2.7764451*math.Sqrt(ss/(n-1)/n) < 0 { // t(0.975, 4): the README's 5 seeds
			negative++
		}
	}
	t.Logf("%d bounds checked; a t-interval would have put %d lower bounds below zero", bounds, negative)
}
