package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/salusgo/salus/plots/layoutcheck"
)

// Each of the paper's figures drawn alone carries the paper's values beside
// ours, the user's scheme among ours where the figure takes it, and reads
// well (the layout check: no overlapping text, labelled axes).
func TestPaperFiguresDrawThePapersValues(t *testing.T) {
	rep, err := ReproducePaper(PaperOptions{Seeds: 2, Schemes: []Scheme{{"salus", "las"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, paperSeries, paperCategory string
		paperValue                       float64
		user                             string
	}{
		{"Table 1", "paper", "FIFO makespan", 303.4, "las (yours) avg_jct"},
		{"fig7", "paper FIFO", "1.0000", 254, "ours las (yours)"},
		{"11", "PACK, paper", "resnet50_50 x300", 572.6, ""},
	} {
		fig, data, err := rep.Figure(c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		problems, _ := layoutcheck.Check(fig)
		for _, p := range problems {
			t.Errorf("%s: %s", c.name, p)
		}
		for _, u := range fig.UnlabelledAxes() {
			t.Errorf("%s: %s", c.name, u)
		}
		paper, user := false, c.user == ""
		for _, d := range data {
			if d.Series == c.paperSeries && d.Category == c.paperCategory && math.Abs(d.Value-c.paperValue) < 1e-9 {
				paper = true
			}
			if c.user != "" && (strings.HasPrefix(d.Series, c.user) || d.Category == c.user) {
				user = true
			}
		}
		if !paper {
			t.Errorf("%s: the paper's %s %s (%v) is not among what it drew", c.name, c.paperSeries, c.paperCategory, c.paperValue)
		}
		if !user {
			t.Errorf("%s: the user's scheme (%s) is not among what it drew", c.name, c.user)
		}
	}
	if _, _, err := rep.Figure("9"); err == nil || !strings.Contains(err.Error(), "table1, 7, 11") {
		t.Errorf("figure 9: %v, want a refusal naming the figures", err)
	}
}
