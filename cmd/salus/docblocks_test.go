package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every fenced shell block of the README and of docs/ runs here, as the
// README's quick starts do (TestReadmeQuickStarts, which runs those). The
// convention, which docs/tests.md states too:
//
//   - a shell block is a fence of info string sh, bash, shell or console (a
//     console block's commands are its lines that begin "$ ", the rest is what
//     they print); a fence without an info string holds no command (output,
//     a drawing): one whose first line is a command is an error;
//   - a block that cannot run in a test is marked on the line before its fence
//     by `<!-- needs: WHAT -->`, WHAT saying what it needs: "a CUDA GPU", "a
//     Kubernetes cluster", "data: ..." (files not in the checkout), "long:
//     ..." (minutes: the page quotes its figures, measured); such a block is
//     checked (its salus commands parse, the files it names exist) and not
//     run, but for "long:" blocks when SALUS_DOCS_LONG=1;
//   - `<!-- file: NAME -->` before a fence of any kind writes the block into
//     NAME, in the page's scratch directory, for the page's shell blocks to
//     read (a cluster file the page shows, say);
//   - a page's blocks run in order, in one scratch directory laid out as the
//     quick starts' (links to examples/, client/ and deploy/), so that one
//     block may read what an earlier one wrote; `go run ./cmd/salus` runs the
//     salus under test, as `salus` does. Pages run side by side.

// docBlock is a fenced block of a page.
type docBlock struct {
	file  string // relative to the repository's root
	line  int    // the opening fence's line
	info  string // the fence's info string
	needs string // the needs marker's WHAT; "" when unmarked
	write string // the file marker's NAME; "" when none
	body  []string
}

// shellInfos are the info strings of a shell block.
var shellInfos = []string{"sh", "bash", "shell", "console"}

var (
	needsRE       = regexp.MustCompile(`^<!--\s*needs:(.*?)-->\s*$`)
	fileRE        = regexp.MustCompile(`^<!--\s*file:\s*([A-Za-z0-9._-]+)\s*-->\s*$`)
	commandLineRE = regexp.MustCompile(`^(\$ |salus |\./salus |go (run|build|test|install) |kubectl |helm |docker |python3? |bash )`)
)

// docPages are the README and the hand-written pages of docs/ (the CLI
// reference is generated).
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, pages...)
}

// pageBlocks reads a page's fenced blocks, with their markers, and the
// problems of its markers: one that is malformed or says nothing.
func pageBlocks(rel, text string) ([]docBlock, []string) {
	lines := strings.Split(text, "\n")
	var blocks []docBlock
	var problems []string
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "```")
		if !ok {
			continue
		}
		b := docBlock{file: rel, line: i + 1, info: strings.TrimSpace(info)}
		if i > 0 {
			prev := strings.TrimSpace(lines[i-1])
			if m := needsRE.FindStringSubmatch(prev); m != nil {
				b.needs = strings.TrimSpace(m[1])
				if what, long := strings.CutPrefix(b.needs, "long:"); b.needs == "" || long && strings.TrimSpace(what) == "" {
					problems = append(problems, fmt.Sprintf("%s:%d: a needs marker that does not say what the block needs: <!-- needs: a CUDA GPU -->, <!-- needs: long: 3 min of CPU -->", rel, i))
					b.needs = "?"
				}
			} else if m := fileRE.FindStringSubmatch(prev); m != nil {
				b.write = m[1]
			} else if strings.HasPrefix(prev, "<!--") && (strings.Contains(prev, "need") || strings.Contains(prev, "file")) {
				problems = append(problems, fmt.Sprintf("%s:%d: %q is no marker: <!-- needs: WHAT --> or <!-- file: NAME -->", rel, i, prev))
			}
		}
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			b.body = append(b.body, lines[i])
		}
		blocks = append(blocks, b)
	}
	return blocks, problems
}

// pageRun says which of a page's blocks a test runs or writes, in order, and
// what is wrong with the others: a command in a fence that does not say it
// is one, a marker where it means nothing. quick are the README's quick
// starts, which TestReadmeQuickStarts runs.
func pageRun(blocks []docBlock, quick []quickBlock) ([]docBlock, []string) {
	var run []docBlock
	var problems []string
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		switch {
		case b.info == "" && len(b.body) > 0 && commandLineRE.MatchString(strings.TrimSpace(b.body[0])):
			problems = append(problems, fmt.Sprintf("%s: a fence without an info string begins with a command (%q): make it ```sh (it runs in TestDocsShellBlocks), ```console (the $ lines run) or ```text (what a command prints)", where, strings.TrimSpace(b.body[0])))
		case !b.isShell():
			if b.needs != "" {
				problems = append(problems, fmt.Sprintf("%s: a needs marker on a ```%s block, which does not run: only shell blocks take one", where, b.info))
			}
			if b.write != "" {
				run = append(run, b)
			}
		case isQuickStart(quick, b):
			// TestReadmeQuickStarts runs it.
		case !slices.Contains(shellInfos, b.info):
			problems = append(problems, fmt.Sprintf("%s: a shell block's info string is sh, bash, shell or console, not %q: say what it needs in <!-- needs: WHAT --> instead", where, b.info))
		case b.write != "":
			problems = append(problems, fmt.Sprintf("%s: a file marker on a shell block: a file is written from a block that shows it (yaml, csv)", where))
		default:
			run = append(run, b)
		}
	}
	return run, problems
}

// isShell says whether a block is a shell block.
func (b docBlock) isShell() bool {
	return slices.Contains(shellInfos, strings.Fields(b.info + " x")[0])
}

// commands are a shell block's commands: a console block's "$ " lines (with
// their continuations), every line of another; `go run ./cmd/salus` is salus.
func (b docBlock) commands() []string {
	var out []string
	cont := false
	for _, l := range b.body {
		if b.info == "console" {
			c, ok := strings.CutPrefix(l, "$ ")
			if !ok && !cont {
				continue
			}
			if ok {
				l = c
			}
			cont = strings.HasSuffix(l, "\\")
		}
		out = append(out, strings.ReplaceAll(l, "go run ./cmd/salus", "salus"))
	}
	return out
}

// TestDocsShellBlocks runs every shell block of the README (its quick starts
// are TestReadmeQuickStarts's) and of docs/, but those marked as needing
// what a test does not have.
func TestDocsShellBlocks(t *testing.T) {
	for _, page := range docPages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, page)
		blocks, problems := pageBlocks(rel, string(raw))
		var quick []quickBlock
		if rel == "README.md" {
			quick = readmeQuickStarts(t)
		}
		run, more := pageRun(blocks, quick)
		for _, p := range append(problems, more...) {
			t.Error(p)
		}
		if !slices.ContainsFunc(run, docBlock.isShell) {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			runPage(t, run)
		})
	}
}

// TestDocBlockMarkers: what the test above takes for a block to run, one to
// leave, and a mistake.
func TestDocBlockMarkers(t *testing.T) {
	page := strings.Join([]string{
		"```sh", "salus version", "```", // 1: runs
		"<!-- needs: a CUDA GPU -->", "```sh", "salus serve --device auto", "```", // 5: marked
		"<!-- needs: -->", "```sh", "salus version", "```", // 9: says nothing
		"<!-- needs: long: -->", "```bash", "salus version", "```", // 13: says nothing
		"<!-- need a GPU -->", "```sh", "salus version", "```", // 17: no marker
		"```", "salus eval", "```", // 20: a command, unlabeled
		"```", "  scheme  makespan", "```", // 23: output
		"```sh gpu", "salus version", "```", // 26: not a quick start
		"<!-- file: c.yaml -->", "```yaml", "shapes: []", "```", // 30: written
		"<!-- needs: a GPU -->", "```yaml", "a: 1", "```", // 34: marker on no shell
		"```console", "$ salus trace gen \\", "  --seed 7", "salus: a warning", "$ salus version", "```", // 37
	}, "\n")
	blocks, problems := pageBlocks("p.md", page)
	run, more := pageRun(blocks, nil)
	problems = append(problems, more...)
	var lines []int
	for _, b := range run {
		lines = append(lines, b.line)
	}
	if want := []int{1, 5, 9, 13, 17, 30, 37}; !slices.Equal(lines, want) {
		t.Errorf("blocks run or written at lines %v, want %v", lines, want)
	}
	var at []string
	for _, p := range problems {
		at = append(at, strings.SplitN(p, ": ", 2)[0])
	}
	if want := []string{"p.md:8", "p.md:12", "p.md:16", "p.md:20", "p.md:26", "p.md:34"}; !slices.Equal(at, want) {
		t.Errorf("problems at %q, want %q:\n%s", at, want, strings.Join(problems, "\n"))
	}
	if run[1].needs != "a CUDA GPU" || run[4].needs != "" || run[5].write != "c.yaml" {
		t.Errorf("markers read: %+v", run)
	}
	steps := run[6].steps()
	if len(steps) != 2 || steps[0].command != "salus trace gen \\\n  --seed 7" || !slices.Equal(steps[0].shown, []string{"salus: a warning"}) || steps[1].shown != nil {
		t.Errorf("the console block's steps: %q", steps)
	}
}

// isQuickStart says whether a README block is one of its quick starts'.
func isQuickStart(quick []quickBlock, b docBlock) bool {
	for _, q := range quick {
		if slices.Equal(q.lines, b.body) {
			return true
		}
	}
	return false
}

// runPage runs a page's shell blocks in order in one scratch directory, after
// writing the files its file markers name as they come.
func runPage(t *testing.T, blocks []docBlock) {
	all := quickBlock{section: blocks[0].file}
	for _, b := range blocks {
		if b.isShell() && b.needs == "" {
			all.lines = append(all.lines, b.commands()...)
		}
	}
	dir, env := quickDir(t, all)
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		if b.write != "" {
			if err := os.WriteFile(filepath.Join(dir, b.write), []byte(strings.Join(b.body, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		qb := quickBlock{section: where, lines: b.commands()}
		long, isLong := strings.CutPrefix(b.needs, "long:")
		if b.needs != "" {
			// Checked here, where it does not run (its salus commands parse from
			// this package's folder: a file a flag reads is looked for there).
			checkQuickBlock(t, qb)
		}
		switch {
		case b.needs == "":
		case isLong && os.Getenv("SALUS_DOCS_LONG") == "1":
		case isLong:
			t.Logf("%s: not run (%s): SALUS_DOCS_LONG=1 runs it; its commands and files were checked", where, strings.TrimSpace(long))
			continue
		default:
			t.Logf("%s: not run, it needs %s; its commands and files were checked", where, b.needs)
			continue
		}
		if b.info == "console" {
			runConsole(t, b, dir, env)
			continue
		}
		runScript(t, qb, dir, env)
	}
}

// consoleStep is a console block's command and the lines shown after it.
type consoleStep struct {
	command string
	shown   []string
}

// steps splits a console block into its commands, each with what the block
// shows it printed.
func (b docBlock) steps() []consoleStep {
	var out []consoleStep
	cont := false
	for _, l := range b.body {
		c, ok := strings.CutPrefix(l, "$ ")
		switch {
		case cont:
			out[len(out)-1].command += "\n" + l
			cont = strings.HasSuffix(l, "\\")
		case ok:
			out = append(out, consoleStep{command: strings.ReplaceAll(c, "go run ./cmd/salus", "salus")})
			cont = strings.HasSuffix(c, "\\")
		case len(out) > 0 && strings.TrimSpace(l) != "":
			out[len(out)-1].shown = append(out[len(out)-1].shown, l)
		}
	}
	return out
}

// runConsole runs a console block's commands one by one: each line the block
// shows after a command must be one the command printed (on either stream;
// the block may leave lines out, never change one), and a command may fail
// only where the block shows what it printed.
func runConsole(t *testing.T, b docBlock, dir string, env []string) {
	t.Helper()
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, st := range b.steps() {
		out, trace, err := execScript(st.command+"\n", dir, env, nil)
		if err != nil && len(st.shown) == 0 {
			t.Errorf("%s:%d: $ %s failed (%v), and the block shows nothing it printed:\n%s%s", b.file, b.line, st.command, err, out, trace)
			continue
		}
		printed := map[string]bool{}
		for _, l := range strings.Split(out+"\n"+trace, "\n") {
			printed[norm(l)] = true
		}
		var wrong []string
		for _, l := range st.shown {
			if !printed[norm(l)] {
				wrong = append(wrong, l)
			}
		}
		if len(wrong) > 0 {
			t.Errorf("%s:%d: $ %s did not print %d of the lines the block shows (copy them from its output):\n%s\nit printed:\n%s%s", b.file, b.line, st.command, len(wrong), strings.Join(wrong, "\n"), out, trace)
		}
	}
}
