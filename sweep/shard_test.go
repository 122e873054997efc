package sweep

import "testing"

// Every run of a grid is in exactly one shard, whatever the shard count.
func TestShardsCoverTheGridOnce(t *testing.T) {
	g := Grid{Policies: []string{"fifo", "pack"}, Modes: []string{DefaultMode}, Seeds: []int64{1, 2, 3}, Loads: []float64{1, 2}, CapacitiesMiB: []float64{1000}}
	cells := g.Cells(Applicable)
	all := g.Tasks(cells, nil)
	for _, n := range []int{1, 2, 5, 13} {
		seen := map[string]int{}
		for i := range n {
			sh := g
			sh.Shard = &Shard{Index: i, Count: n}
			for _, task := range sh.Tasks(cells, nil) {
				seen[task.key()]++
			}
		}
		if len(seen) != len(all) {
			t.Fatalf("%d shards ran %d distinct runs of %d", n, len(seen), len(all))
		}
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("%d shards: run %s ran %d times", n, k, c)
			}
		}
	}
	for _, bad := range []string{"3/3", "-1/2", "1", "a/b", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) took it", bad)
		}
	}
	if sh, err := ParseShard("2/4"); err != nil || sh.Index != 2 || sh.Count != 4 {
		t.Errorf("ParseShard(2/4) = %v, %v", sh, err)
	}
}
