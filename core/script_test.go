package core

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScripts runs the interaction scripts in testdata: each file states one rule
// of the core as events in and decisions out (the style of etcd raft's
// interaction tests). Directives:
//
//	new policy=NAME [mode=MODE] [capacity=MIB] [quantum=S] [clients=N] [gpus=N] [placement=NAME]
//	    [admission=arrival|policy] [starve=K] [migrate]
//	at t=SECONDS        input: one event a line, then Decide; prints the decisions
//	state               prints lanes, ready queues and waiting jobs
//	next                prints NextDeadline: when the core must decide with no event
//
// Events: "arrive JOB [persistent=MIB] [ephemeral=MIB] [declared=S] [gpus=N] [priority=N] [share=W]",
// "restore JOB arrival=S attained=S iterations=N [persistent=MIB] [ephemeral=MIB] [declared=S]",
// "request JOB", "end JOB gpu=S", "yield JOB", "leave JOB". An event the core
// refuses prints "error: ..." and the script goes on. Rewrite the expected output
// with: go test ./core -run TestScripts -rewrite
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var s *Scheduler
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "new":
				var err error
				s, err = newFromArgs(td)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return ""
			case "at":
				var secs string
				td.ScanArgs(t, "t", &secs)
				now := scriptTime(t, secs)
				var out strings.Builder
				for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
					if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
						continue
					}
					if err := scriptEvent(t, s, now, line); err != nil {
						fmt.Fprintf(&out, "error: %v\n", err)
					}
				}
				ds, err := s.Decide(now)
				if err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				}
				if err := s.checkViews(); err != nil {
					t.Errorf("%s: %v", td.Pos, err)
				}
				for _, d := range ds {
					out.WriteString(formatDecision(d) + "\n")
				}
				return out.String()
			case "state":
				return formatState(s)
			case "next":
				if at, ok := s.NextDeadline(); ok {
					return fmt.Sprintf("decide at t=%v\n", at.Seconds())
				}
				return "none\n"

			}
			t.Fatalf("%s: unknown directive %q", td.Pos, td.Cmd)
			return ""
		})
	})
}

func newFromArgs(td *datadriven.TestData) (*Scheduler, error) {
	policy, mode, capacity, quantum, clients, gpus, placement := "", "", "14000", "10", 16, 1, ""
	mp := DefaultModeParams()
	for _, a := range td.CmdArgs {
		switch a.Key {
		case "policy":
			policy = a.Vals[0]
		case "mode":
			mode = a.Vals[0]
		case "capacity":
			capacity = a.Vals[0]
		case "quantum":
			quantum = a.Vals[0]
		case "clients":
			n, err := strconv.Atoi(a.Vals[0])
			if err != nil {
				return nil, err
			}
			clients = n
		case "gpus":
			n, err := strconv.Atoi(a.Vals[0])
			if err != nil {
				return nil, err
			}
			gpus = n
		case "placement":
			placement = a.Vals[0]
		case "admission":
			mp.Admission = a.Vals[0]
		case "migrate":
			mp.Migrate = true
		case "starve":
			k, err := strconv.ParseFloat(a.Vals[0], 64)
			if err != nil {
				return nil, err
			}
			mp.StarveFactor = k
		default:
			return nil, fmt.Errorf("new: unknown argument %q", a.Key)
		}
	}
	q, err := strconv.ParseFloat(quantum, 64)
	if err != nil {
		return nil, err
	}
	mp.SuspendQuantumS, mp.MPSMaxClients = q, clients
	p, err := Compose(mode, policy, mp)
	if err != nil {
		return nil, err
	}
	c, err := strconv.ParseFloat(capacity, 64)
	if err != nil {
		return nil, err
	}
	gp, err := LookupGPUPlacement(placement)
	if err != nil {
		return nil, err
	}
	d := Uniform(gpus, c)
	d.Placement = gp
	return NewNode(p, d)
}

func scriptTime(t *testing.T, s string) time.Duration {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	d, err := Seconds(f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func scriptEvent(t *testing.T, s *Scheduler, now time.Duration, line string) error {
	f := strings.Fields(line)
	if len(f) < 2 {
		t.Fatalf("event %q: want VERB JOB [key=value...]", line)
	}
	verb, id := f[0], f[1]
	kv := map[string]string{}
	for _, a := range f[2:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			t.Fatalf("event %q: %q is not key=value", line, a)
		}
		kv[k] = v
	}
	num := func(k, def string) float64 {
		v, ok := kv[k]
		if !ok {
			v = def
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("event %q: %s: %v", line, k, err)
		}
		return x
	}
	switch verb {
	case "arrive":
		return s.Arrive(now, Job{ID: id, Arrival: now, Persistent: num("persistent", "100"), Ephemeral: num("ephemeral", "100"),
			Declared: scriptTime(t, strconv.FormatFloat(num("declared", "1"), 'g', -1, 64)), GPUs: int(num("gpus", "1")),
			Priority: int(num("priority", "0")), Share: num("share", "0")})
	case "restore":
		j := Job{ID: id, Arrival: scriptTime(t, kv["arrival"]), Persistent: num("persistent", "100"), Ephemeral: num("ephemeral", "100"),
			Declared: scriptTime(t, strconv.FormatFloat(num("declared", "1"), 'g', -1, 64))}
		return s.Restore(now, j, scriptTime(t, kv["attained"]), int(num("iterations", "0")))
	case "request":
		return s.Request(now, id)
	case "end":
		return s.IterationEnd(now, id, scriptTime(t, kv["gpu"]))
	case "yield":
		return s.Yield(now, id)
	case "leave":
		return s.Leave(now, id)
	}
	t.Fatalf("event %q: unknown verb %q", line, verb)
	return nil
}

func formatDecision(d Decision) string {
	switch d.Action {
	case Admit:
		s := fmt.Sprintf("admit %s lane=%d size=%g", d.Job, d.Lane, d.LaneSize)
		if d.NewLane {
			s += " new"
		}
		return s + formatGPUs(d.GPUs)
	case Start:
		s := fmt.Sprintf("start %s lane=%d", d.Job, d.Lane)
		if d.Previous != "" {
			s += " after=" + d.Previous
		}
		return s + formatGPUs(d.GPUs)
	case Defrag:
		r := d.Regroup
		s := fmt.Sprintf("%s lane=%d size=%g", r.Kind, d.Lane, d.LaneSize)
		for i, id := range r.Jobs {
			if r.Kind == "split" {
				s += fmt.Sprintf(" %s->lane=%d", id, r.Lanes[i])
			} else {
				s += " " + id
			}
		}
		if r.Kind == "merge" && len(r.Lanes) > 0 {
			s += fmt.Sprintf(" from=%d", r.Lanes[0])
		}
		return s + formatGPUs(d.GPUs)
	case Migrate:
		s := fmt.Sprintf("migrate %s lane=%d size=%g", d.Job, d.Lane, d.LaneSize)
		if d.NewLane {
			s += " new"
		}
		return s + fmt.Sprintf(" from=%d gpu=%d->%d copy=%g", d.From, d.FromGPU, d.GPUs[0], d.CopyMiB)
	}
	return d.Action.String()
}

// formatGPUs names the GPUs of a decision, unless it is GPU 0 alone (so that the
// one-GPU scripts read as before).
func formatGPUs(gpus []int) string {
	if len(gpus) == 1 && gpus[0] == 0 {
		return ""
	}
	var out []string
	for _, g := range gpus {
		out = append(out, strconv.Itoa(g))
	}
	return " gpus=" + strings.Join(out, ",")
}

func formatState(s *Scheduler) string {
	var b strings.Builder
	for _, l := range s.lanes {
		var jobs, ready []string
		l.each(func(j *jobState) {
			jobs = append(jobs, fmt.Sprintf("%s(%s, attained %v, remaining %v)", j.id(), j.phase, j.view.Attained, j.view.Remaining()))
		})
		// In the order they joined the queue (a request's order), not the heap's.
		queued := slices.Clone(l.ready.jobs)
		slices.SortFunc(queued, func(a, b *jobState) int { return cmp.Compare(a.view.RequestSeq, b.view.RequestSeq) })
		for _, j := range queued {
			ready = append(ready, j.id())
		}
		holder := "-"
		if l.holder != nil {
			holder = l.holder.id()
		}
		fmt.Fprintf(&b, "lane %d size=%g holder=%s ready=[%s]%s\n", l.id, l.size, holder, strings.Join(ready, " "), formatGPUs(l.gpus))
		for _, j := range jobs {
			fmt.Fprintf(&b, "  %s\n", j)
		}
	}
	fmt.Fprintf(&b, "waiting=[%s] free=%g\n", strings.Join(s.Waiting(), " "), s.Free())
	return b.String()
}
