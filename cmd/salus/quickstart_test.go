package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The README's quick starts are followed here, command for command. The
// convention, which docs/tests.md states too:
//
//   - a quick start is a README section whose heading begins "## Quick start";
//   - its fenced blocks say by their info string where they run: "sh" here,
//     "sh gpu" on a machine with an NVIDIA GPU and CUDA PyTorch, "sh cluster"
//     against a Kubernetes cluster (no other info string is allowed in a quick
//     start);
//   - a quick start has at most quickStartMaxLines lines of commands.
//
// Every block is checked: each salus command parses with salus's own flags, each
// file it names exists, each manifest it applies decodes strictly, each helm
// --set key is a value of the chart. "sh" blocks then run as one bash script
// (set -e, each command traced) in a scratch directory that holds links to the
// repository's examples/, client/ and deploy/, with the salus under test first
// on PATH; "sh gpu" blocks run the same way when python3 sees a CUDA GPU;
// "sh cluster" blocks run, from the repository's root, only with kubectl and
// helm on PATH and SALUS_QUICKSTART_CLUSTER=1, since a test must not install
// into whatever cluster the machine's kubeconfig names.

const quickStartMaxLines = 10

type quickBlock struct {
	section string // the heading, without "## "
	kind    string // "", "gpu" or "cluster"
	lines   []string
}

func (b quickBlock) script() string { return strings.Join(b.lines, "\n") + "\n" }

// readmeQuickStarts reads the README's quick-start blocks, failing on a fence
// whose info string the convention does not have.
func readmeQuickStarts(t *testing.T) []quickBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []quickBlock
	var cur *quickBlock
	heading := ""
	for i, l := range strings.Split(string(b), "\n") {
		if cur != nil {
			if strings.HasPrefix(l, "```") {
				blocks = append(blocks, *cur)
				cur = nil
			} else {
				cur.lines = append(cur.lines, l)
			}
			continue
		}
		if h, ok := strings.CutPrefix(l, "## "); ok {
			heading = h
			continue
		}
		info, ok := strings.CutPrefix(l, "```")
		if !ok {
			continue
		}
		if !strings.HasPrefix(heading, "Quick start") {
			// Another section's block: skip to its end.
			cur = &quickBlock{section: "-"}
			continue
		}
		switch info {
		case "sh", "sh gpu", "sh cluster":
			cur = &quickBlock{section: heading, kind: strings.TrimSpace(strings.TrimPrefix(info, "sh"))}
		default:
			t.Fatalf("README.md line %d: a quick start's block is ```sh, ```sh gpu or ```sh cluster, not ```%s", i+1, info)
		}
	}
	var out []quickBlock
	for _, b := range blocks {
		if b.section != "-" {
			out = append(out, b)
		}
	}
	return out
}

// TestReadmeQuickStarts follows the README's quick starts, command for command.
func TestReadmeQuickStarts(t *testing.T) {
	blocks := readmeQuickStarts(t)
	lines := map[string]int{}
	var sections []string
	for _, b := range blocks {
		if _, ok := lines[b.section]; !ok {
			sections = append(sections, b.section)
		}
		for _, l := range b.lines {
			if strings.TrimSpace(l) != "" {
				lines[b.section]++
			}
		}
	}
	if len(sections) != 3 {
		t.Errorf("the README has %d quick starts (%q), want 3: simulate, the daemon, Kubernetes", len(sections), sections)
	}
	for _, s := range sections {
		if lines[s] > quickStartMaxLines {
			t.Errorf("quick start %q has %d lines of commands, over %d", s, lines[s], quickStartMaxLines)
		}
	}
	for i, b := range blocks {
		name := fmt.Sprintf("%d %s", i+1, b.section)
		if b.kind != "" {
			name += " (" + b.kind + ")"
		}
		t.Run(name, func(t *testing.T) {
			checkQuickBlock(t, b)
			switch b.kind {
			case "":
				runQuickBlock(t, b)
			case "gpu":
				py := torchPython(t)
				if py == "" || exec.Command(py, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)").Run() != nil {
					t.Skip("this block needs an NVIDIA GPU and CUDA PyTorch: python3 sees no CUDA device here; its commands and files were checked")
				}
				runQuickBlock(t, b)
			case "cluster":
				_, kerr := exec.LookPath("kubectl")
				_, herr := exec.LookPath("helm")
				if kerr != nil || herr != nil {
					t.Skip("this block needs a Kubernetes cluster: kubectl or helm is not on PATH; its files, manifests and chart values were checked")
				}
				if os.Getenv("SALUS_QUICKSTART_CLUSTER") != "1" {
					t.Skip("this block installs into the cluster kubectl names: set SALUS_QUICKSTART_CLUSTER=1 to run it; its files, manifests and chart values were checked")
				}
				root, err := filepath.Abs(repoRoot)
				if err != nil {
					t.Fatal(err)
				}
				runScript(t, b, root, os.Environ())
			}
		})
	}
}

// quickChecks are what a block's output must show, by section.
var quickChecks = map[string]func(t *testing.T, dir, out string){
	"Quick start: simulate your trace and read the recommendation": func(t *testing.T, dir, out string) {
		if !strings.Contains(out, "Recommendation:") {
			t.Errorf("salus eval printed no recommendation:\n%s", out)
		}
		for _, f := range []string{"my-trace.csv", "results/eval/index.html", "results/eval/results.json", "results/sweep/sweep.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("the quick start wrote no %s", f)
			}
		}
	},
	"Quick start: your PyTorch loop under the daemon": func(t *testing.T, dir, out string) {
		for _, f := range []string{"a.jsonl", "b.jsonl"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil || !bytes.Contains(b, []byte(`"ev": "done"`)) {
				t.Errorf("job %s did not finish: %v\n%s", f, err, b)
			}
		}
		if !strings.Contains(out, "2 jobs") {
			t.Errorf("salus report did not report the two jobs:\n%s", out)
		}
	},
}

// runQuickBlock runs a block in a scratch directory laid out as the
// repository's root for what the quick starts read.
func runQuickBlock(t *testing.T, b quickBlock) {
	t.Helper()
	work, env := quickDir(t, b)
	out := runScript(t, b, work, env)
	if check := quickChecks[b.section]; check != nil {
		check(t, work, out)
	}
}

// quickDir lays out a scratch directory for a block: links to the
// repository's folders, salus and a python3 first on PATH; it returns the
// directory and the block's environment.
func quickDir(t *testing.T, b quickBlock) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	work, bin, home, run := filepath.Join(dir, "w"), filepath.Join(dir, "bin"), filepath.Join(dir, "home"), filepath.Join(dir, "run")
	for _, d := range []string{work, bin, home, run} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"examples", "client", "deploy"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	// The checkout's own folders whose names a results folder might take (a
	// Go package, the docs): copies of a file each, so that a quick start run
	// from the root that wrote into one would be refused (createOut), and
	// would not touch the checkout if it were not.
	for _, d := range []string{"sweep", "eval", "report", "docs"} {
		if err := os.Mkdir(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, d, "doc.go"), []byte("package "+d+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// salus: this test's binary, which is salus when SALUS_CMD_TEST_MAIN=1
	// (TestMain), built from the code under test.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nSALUS_CMD_TEST_MAIN=1 exec %q \"$@\"\n", self)
	if err := os.WriteFile(filepath.Join(bin, "salus"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if byShebang := runsAScript(t, b); byShebang || strings.Contains(b.script(), "python3") {
		py := torchPython(t)
		if py == "" || byShebang && py != systemPython {
			t.Skip("no python3 (nor /usr/bin/python3, which the examples' #! names) imports torch: install python3-torch (bash scripts/test.sh does) to run this quick start")
		}
		if b.kind == "" && py == systemPython {
			// A fresh machine after scripts/test.sh: torch is /usr/bin/python3's,
			// and the python3 first on PATH may well lack it (a pyenv, a venv).
			// Such a python3 here, so that the block must pick its Python itself.
			stub := fmt.Sprintf("#!/bin/sh\nexec %s -S \"$@\"   # no site-packages: no torch\n", systemPython)
			if err := os.WriteFile(filepath.Join(bin, "python3"), []byte(stub), 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Symlink(py, filepath.Join(bin, "python3")); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "XDG_RUNTIME_DIR="+run)
	return work, env
}

// runsAScript says whether a block runs a Python script of the repository by
// its #! line.
func runsAScript(t *testing.T, b quickBlock) bool {
	t.Helper()
	for _, c := range shellCommands(t, b.script()) {
		if repoPath(c[0]) && strings.HasSuffix(c[0], ".py") {
			return true
		}
	}
	return false
}

// systemPython is where scripts/test.sh installs torch (Debian's python3-torch).
const systemPython = "/usr/bin/python3"

// TestReadmeDaemonQuickStartStopsItsDaemon: the daemon quick start, copied into
// a script under set -e whose step fails (a job that is not there), leaves no
// daemon running: the block stops it on its way out.
func TestReadmeDaemonQuickStartStopsItsDaemon(t *testing.T) {
	var b quickBlock
	for _, q := range readmeQuickStarts(t) {
		if q.section == "Quick start: your PyTorch loop under the daemon" && q.kind == "" {
			b = q
		}
	}
	if b.lines == nil {
		t.Fatal("the README has no daemon quick start")
	}
	failing := b
	failing.lines = nil
	for _, l := range b.lines {
		failing.lines = append(failing.lines, strings.ReplaceAll(l, "examples/minimal.py", "examples/no-such-job.py"))
	}
	if slices.Equal(failing.lines, b.lines) {
		t.Fatal("the daemon quick start runs no examples/minimal.py: this test no longer makes it fail")
	}
	work, env := quickDir(t, b)
	listening := true
	_, trace, err := execScript(failing.script(), work, env, func() {
		// The script has exited: a daemon it left behind still listens.
		c, err := net.Dial("unix", filepath.Join(work, "salus.sock"))
		if err == nil {
			c.Close()
		}
		listening = err == nil
	})
	if err == nil {
		t.Fatalf("the quick start with a job that is not there succeeded:\n%s", trace)
	}
	if listening {
		t.Errorf("the quick start failed (%v) and left its daemon running: stop it on exit (a trap)\n%s", err, trace)
	}
}

// runScript runs a block's lines as one bash script in dir, in a process group
// of its own that is ended afterwards (a daemon the block left behind with it),
// and returns what it printed.
func runScript(t *testing.T, b quickBlock, dir string, env []string) string {
	t.Helper()
	out, trace, err := execScript(b.script(), dir, env, nil)
	if err != nil {
		t.Fatalf("quick start %q failed: %v\nthe block:\n%s\nstdout:\n%s\nstderr (each command after +):\n%s", b.section, err, b.script(), out, trace)
	}
	return out
}

// execScript runs script under set -e -x in dir, calls after (when not nil)
// once bash has exited, then ends the process group, and returns what the
// script printed on stdout and on stderr.
func execScript(script, dir string, env []string, after func()) (string, string, error) {
	// A guard against a hang, not a timing: the quick starts take seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	script = "set -e -x\n" + script
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out, trace bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &trace
	err := cmd.Run()
	if after != nil {
		after()
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return out.String(), trace.String(), err
}

// torchPython is a python3 that imports torch: the one on PATH, else
// /usr/bin/python3 (where scripts/test.sh installs it); "" when neither does.
func torchPython(t *testing.T) string {
	t.Helper()
	var cands []string
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3")
	for _, p := range cands {
		if exec.Command(p, "-c", "import torch").Run() == nil {
			return p
		}
	}
	return ""
}

// checkQuickBlock checks a block without running it: its salus commands parse,
// the files it names exist, its manifests decode, its helm values exist.
func checkQuickBlock(t *testing.T, b quickBlock) {
	t.Helper()
	for _, c := range shellCommands(t, b.script()) {
		for _, w := range c {
			if repoPath(w) {
				if _, err := os.Stat(filepath.Join(repoRoot, w)); err != nil {
					t.Errorf("%q names %s, which the repository does not have", strings.Join(c, " "), w)
				}
			}
		}
		if repoPath(c[0]) {
			if fi, err := os.Stat(filepath.Join(repoRoot, c[0])); err == nil && fi.Mode()&0o111 == 0 {
				t.Errorf("%q runs %s, which is not executable: chmod +x it", strings.Join(c, " "), c[0])
			}
		}
		switch c[0] {
		case "salus":
			cmd, rest, err := newRoot().Find(c[1:])
			if err != nil || cmd == nil || cmd.Name() == "salus" {
				t.Errorf("%q: salus has no such command (%v)", strings.Join(c, " "), err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%q: %v", strings.Join(c, " "), err)
			}
		case "python3":
			if len(c) > 1 && strings.HasSuffix(c[1], ".py") {
				src, err := os.ReadFile(filepath.Join(repoRoot, c[1]))
				if err != nil {
					t.Errorf("%q: %v", strings.Join(c, " "), err)
					continue
				}
				for _, w := range c[2:] {
					if strings.HasPrefix(w, "--") && !bytes.Contains(src, []byte(`"`+strings.SplitN(w, "=", 2)[0]+`"`)) {
						t.Errorf("%q: %s has no option %s", strings.Join(c, " "), c[1], w)
					}
				}
			}
		case "kubectl":
			for i, w := range c {
				if w == "-f" && i+1 < len(c) {
					if err := checkManifests(filepath.Join(repoRoot, c[i+1])); err != nil {
						t.Errorf("%q: %v", strings.Join(c, " "), err)
					}
				}
			}
		case "helm":
			checkHelmValues(t, c)
		case "docker":
			for i, w := range c {
				if w == "-f" && (i+1 >= len(c) || !repoPath(c[i+1])) {
					t.Errorf("%q: -f names no file of the repository", strings.Join(c, " "))
				}
			}
		}
	}
}

// checkHelmValues: helm install NAME CHART's --set and --set-string keys are
// values of the chart (its values.yaml).
func checkHelmValues(t *testing.T, c []string) {
	t.Helper()
	if len(c) < 4 || c[1] != "install" {
		return
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, c[3], "values.yaml"))
	if err != nil {
		t.Errorf("%q: %v", strings.Join(c, " "), err)
		return
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	for i, w := range c {
		if (w != "--set" && w != "--set-string") || i+1 >= len(c) {
			continue
		}
		key, _, _ := strings.Cut(c[i+1], "=")
		var node any = values
		for _, k := range strings.Split(key, ".") {
			m, ok := node.(map[string]any)
			if !ok {
				node = nil
				break
			}
			node, ok = m[k]
			if !ok {
				node = nil
				break
			}
		}
		if node == nil {
			t.Errorf("%q: the chart %s has no value %s", strings.Join(c, " "), c[3], key)
		}
	}
}

// repoPath says whether a word names a file of the repository.
func repoPath(w string) bool {
	for _, d := range []string{"examples/", "deploy/", "client/", "scripts/", "docs/"} {
		if strings.HasPrefix(w, d) {
			return true
		}
	}
	return false
}

// shellCommands splits a script into simple commands, each its words: quotes
// are removed, comments dropped, a line ending in \ continues, and ;, &&, ||, &
// and | separate commands; a redirection's target is left out. Assignments
// (NAME=value) before a command, and commands that are only assignments, are
// dropped. Enough for the quick starts' lines; a construct it does not know is
// an error, so that the checks above do not pass over a command unseen.
func shellCommands(t *testing.T, script string) [][]string {
	t.Helper()
	script = strings.ReplaceAll(script, "\\\n", " ")
	var cmds [][]string
	for _, line := range strings.Split(script, "\n") {
		var words []string
		flush := func() {
			for len(words) > 0 && isAssignment(words[0]) {
				words = words[1:]
			}
			if len(words) > 0 {
				cmds = append(cmds, words)
			}
			words = nil
		}
		var w strings.Builder
		inWord, redirect := false, false
		end := func() {
			if inWord {
				if redirect {
					redirect = false
				} else {
					words = append(words, w.String())
				}
			}
			w.Reset()
			inWord = false
		}
		for i := 0; i < len(line); i++ {
			ch := line[i]
			switch {
			case ch == '#' && !inWord:
				i = len(line)
			case ch == ' ' || ch == '\t':
				end()
			case ch == '\'' || ch == '"':
				j := strings.IndexByte(line[i+1:], ch)
				if j < 0 {
					t.Fatalf("an unclosed quote in the quick start's line %q", line)
				}
				w.WriteString(line[i+1 : i+1+j])
				inWord = true
				i += j + 1
			case ch == ';' || ch == '&' || ch == '|':
				end()
				if i+1 < len(line) && line[i+1] == ch {
					i++
				}
				flush()
			case ch == '>' || ch == '<':
				end()
				redirect = true
			default:
				w.WriteByte(ch)
				inWord = true
			}
		}
		end()
		flush()
	}
	return cmds
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// TestShellCommands: the splitter the quick starts' checks rely on.
func TestShellCommands(t *testing.T) {
	got := shellCommands(t, "salus serve --addr \"\" --x 'a b' & daemon=$!   # a comment\n"+
		"export SALUS_ADDR=./s.sock\npython3 a.py > a.jsonl & python3 b.py; wait $!\nhelm install x \\\n  --set a=b\n")
	want := [][]string{
		{"salus", "serve", "--addr", "", "--x", "a b"},
		{"export", "SALUS_ADDR=./s.sock"},
		{"python3", "a.py"},
		{"python3", "b.py"},
		{"wait", "$!"},
		{"helm", "install", "x", "--set", "a=b"},
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("shellCommands:\n got %q\nwant %q", got, want)
	}
}

// checkManifests reads every YAML document of a manifest file and wants each to
// name its apiVersion and kind; the k8s module's manifesttest decodes them
// strictly into their Kubernetes types (the root module links no Kubernetes).
func checkManifests(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	for n := 1; ; n++ {
		var doc struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s, document %d: %w", file, n, err)
		}
		if doc.APIVersion == "" || doc.Kind == "" {
			return fmt.Errorf("%s, document %d: no apiVersion or kind", file, n)
		}
	}
}

// TestDocsCopyNoQuickStart: no page of docs/ copies a quick start of the
// README into a block of its own (two of its lines or more, half the block or
// more), where TestReadmeQuickStarts would not run it and the copy could drift:
// a page links the quick start instead. A how-to may repeat a step or two
// among its own.
func TestDocsCopyNoQuickStart(t *testing.T) {
	// A line's words, its comment left out.
	norm := func(l string) string {
		return strings.Join(strings.Fields(trailingCommentRE.ReplaceAllString(l, "")), " ")
	}
	quick := map[string]string{}
	for _, b := range readmeQuickStarts(t) {
		for _, l := range b.lines {
			if l = norm(l); l != "" {
				quick[l] = b.section
			}
		}
	}
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, fence := range fenceRE.FindAllString(string(b), -1) {
			copied := map[string][]string{}
			lines := strings.Split(fence, "\n")
			for _, l := range lines[1 : len(lines)-1] {
				if s, ok := quick[norm(l)]; ok {
					copied[s] = append(copied[s], strings.TrimSpace(l))
				}
			}
			for s, c := range copied {
				if len(c) >= 2 && 2*len(c) >= len(lines)-2 {
					t.Errorf("%s copies %d lines of the README's quick start %q (%q): link it (../README.md#%s) instead", filepath.Base(p), len(c), s, c, slug(s))
				}
			}
		}
	}
}

// trailingCommentRE is a shell line's comment after its command.
var trailingCommentRE = regexp.MustCompile(`(^|\s)#.*$`)
