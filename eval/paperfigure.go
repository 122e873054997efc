package eval

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/salusgo/salus/plots"
)

// PaperFigureNames are the figures salus figure draws alone, each with the
// paper's own values on it.
var PaperFigureNames = []string{"table1", "7", "11"}

// FigureData is one drawn value of a figure: a series (ours, or the paper's)
// at a category, with its seeds' range where it has one.
type FigureData struct {
	Series, Category string
	Value, Low, High float64 // Low, High: NaN where there is no range
}

// Figure draws one of the paper's figures from the report (name: one of
// PaperFigureNames; "fig7", "Fig. 7", "table-1" and the like are taken too)
// with the paper's values drawn on it, and returns what it drew.
func (r *PaperReport) Figure(name string) (plots.Figure, []FigureData, error) {
	switch n := normalFigureName(name); n {
	case "table1":
		return r.table1Figure()
	case "7":
		return r.fig7Figure()
	case "11":
		return r.fig11Figure()
	default:
		return plots.Figure{}, nil, fmt.Errorf("no figure %q: choose %s", name, strings.Join(PaperFigureNames, ", "))
	}
}

// normalFigureName reads "Fig. 7", "fig7", "7", "Table 1", "table-1" alike.
func normalFigureName(s string) string {
	s = strings.ToLower(strings.NewReplacer(" ", "", ".", "", "-", "", "_", "").Replace(s))
	return strings.TrimPrefix(strings.TrimPrefix(s, "figure"), "fig")
}

// rangeOf reads a row's seed range, "lo to hi"; NaN, NaN without one.
func rangeOf(row PaperRow) (float64, float64) {
	lo, hi, ok := strings.Cut(row.Range, " to ")
	if !ok {
		return nan, nan
	}
	return parseOr(lo), parseOr(hi)
}

// parseOr reads a number, NaN where there is none ("-").
func parseOr(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return nan
	}
	return v
}

var nan = math.NaN()

// table1Figure is Table 1's four metrics, a panel each: ours per policy (the
// median over the seeds, its range as an error bar) beside the paper's.
func (r *PaperReport) table1Figure() (plots.Figure, []FigureData, error) {
	cols := []struct{ col, title string }{{"makespan", "makespan"}, {"avg_queuing", "average queuing"}, {"avg_jct", "average JCT"}, {"p95_jct", "p95 JCT"}}
	var cats []string
	for _, row := range r.Rows() {
		if row.Figure == "Table 1" && !slices.Contains(cats, row.Row) {
			cats = append(cats, row.Row)
		}
	}
	if len(cats) == 0 {
		return plots.Figure{}, nil, fmt.Errorf("the report has no Table 1 rows")
	}
	// A user's scheme is drawn as its name and a star: "(yours)" is too wide
	// for a bar's room.
	shown := make([]string, len(cats))
	yours := false
	for i, cat := range cats {
		shown[i] = cat
		if name, ok := strings.CutSuffix(cat, " (yours)"); ok {
			shown[i], yours = name+"*", true
		}
	}
	var data []FigureData
	var panels []plots.Panel
	for _, c := range cols {
		ours := plots.Series{Label: fmt.Sprintf("ours (median of %d seeds, range)", r.Seeds)}
		paper := plots.Series{Label: "paper"}
		for _, cat := range cats {
			row := r.row("Table 1", cat, c.col)
			v := parseOr(row.Ours)
			lo, hi := rangeOf(row)
			ours.Values, ours.Low, ours.High = append(ours.Values, v), append(ours.Low, lo), append(ours.High, hi)
			pv := parseOr(row.Paper)
			paper.Values = append(paper.Values, pv)
			data = append(data, FigureData{"ours", cat + " " + c.col, v, lo, hi}, FigureData{"paper", cat + " " + c.col, pv, nan, nan})
		}
		panels = append(panels, plots.Panel{Title: c.title, Y: "min", Categories: shown, Groups: []plots.Series{ours, paper}, Format: "%.0f"})
	}
	title := fmt.Sprintf("Table 1: the paper trace, %d seeds, beside the paper", r.Seeds)
	if yours {
		title += " (*: yours)"
	}
	return plots.BarsSized("table1", title, 22*vg.Inch, 4.5*vg.Inch, panels...), data, nil
}

// fig7Figure is the JCT distribution of each policy (every seed's jobs) with
// the points read from the paper's drawing.
func (r *PaperReport) fig7Figure() (plots.Figure, []FigureData, error) {
	series := r.jctSeries()
	if len(series) == 0 {
		return plots.Figure{}, nil, fmt.Errorf("the report has no JCTs to draw")
	}
	var data []FigureData
	for k, s := range series {
		for i, v := range s.Values {
			data = append(data, FigureData{"ours " + r.JCTs[k].Policy, strconv.FormatFloat(float64(i+1)/float64(len(s.Values)), 'f', 4, 64), v / 60, nan, nan})
		}
	}
	var marks []plots.Mark
	for _, row := range r.Rows() {
		if row.Figure != "Fig. 7" || row.Paper == "-" {
			continue
		}
		y := 0.5
		if row.Column == "longest_jct" {
			y = 1
		}
		v := parseOr(row.Paper)
		marks = append(marks, plots.Mark{Label: fmt.Sprintf("paper: %s %s", row.Row, strings.ReplaceAll(row.Column, "_", " ")), X: v, Y: y})
		data = append(data, FigureData{"paper " + row.Row, strconv.FormatFloat(y, 'f', 4, 64), v, nan, nan})
	}
	return plots.CDFMarked("fig7", "Fig. 7: JCT distribution on the paper trace, with the paper's points", "JCT (min)", series, 300, marks), data, nil
}

// fig11Figure is Fig. 11's makespans, one by one and under PACK, ours beside
// the paper's.
func (r *PaperReport) fig11Figure() (plots.Figure, []FigureData, error) {
	var cats []string
	for _, row := range r.Rows() {
		if row.Figure == "Fig. 11" && !slices.Contains(cats, row.Row) {
			cats = append(cats, row.Row)
		}
	}
	if len(cats) == 0 {
		return plots.Figure{}, nil, fmt.Errorf("the report has no Fig. 11 rows")
	}
	groups := []struct{ label, col, source string }{
		{"one by one, ours", "makespan_tf_fifo", "ours"}, {"PACK, ours", "makespan_salus", "ours"},
		{"one by one, paper", "makespan_tf_fifo", "paper"}, {"PACK, paper", "makespan_salus", "paper"}}
	var series []plots.Series
	var data []FigureData
	for _, g := range groups {
		s := plots.Series{Label: g.label}
		for _, cat := range cats {
			row := r.row("Fig. 11", cat, g.col)
			v := parseOr(row.Ours)
			if g.source == "paper" {
				v = parseOr(row.Paper)
			}
			s.Values = append(s.Values, v)
			data = append(data, FigureData{g.label, cat, v, nan, nan})
		}
		series = append(series, s)
	}
	p := plots.Panel{Title: "makespan of 300 jobs", Y: "min", Categories: cats, Groups: series, Format: "%.0f"}
	return plots.BarsSized("fig11", "Fig. 11: hyper-parameter exploration, one by one and under PACK", 8*vg.Inch, 4*vg.Inch, p), data, nil
}

// row is the report's row of figure, row and column; empty when it has none.
func (r *PaperReport) row(fig, row, col string) PaperRow {
	for _, x := range r.Rows() {
		if x.Figure == fig && x.Row == row && x.Column == col {
			return x
		}
	}
	return PaperRow{Ours: "-", Paper: "-"}
}
