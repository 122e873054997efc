package server_test

import (
	"testing"
	"time"

	"github.com/salusgo/salus/eventlog"
)

// Under pack-defrag, the daemon carries out a split: mid, which joined big's lane
// for want of memory, gets a lane of its own at big's boundary once fill has left,
// and both are granted at once; the log has the split and mid's start in its new lane.
func TestDaemonSplitsALane(t *testing.T) {
	d := start(t, "pack-defrag", 14336, nil)
	big := open(t, d, "big", 1000, 6000, 10)
	fill := open(t, d, "fill", 1000, 4000, 10)
	mid := open(t, d, "mid", 300, 1400, 10)
	if err := big.Begin(); err != nil {
		t.Fatal(err)
	}
	midGranted := make(chan error, 1)
	go func() { midGranted <- mid.Begin() }()
	time.Sleep(20 * time.Millisecond) // mid now waits for big's lane
	if err := fill.Close(true); err != nil {
		t.Fatal(err)
	}
	if err := big.End(time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	bigGranted := make(chan error, 1)
	go func() { bigGranted <- big.Begin() }()
	for _, c := range []chan error{midGranted, bigGranted} {
		select {
		case err := <-c:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("big and mid were not both granted: the lane was not split")
		}
	}
	split, ok := d.log.find(eventlog.Defrag, "")
	if !ok || split.Reason != "split" || split.Jobs != 1 {
		t.Fatalf("no split of one job in the log: %+v", split)
	}
	bigStart, _ := d.log.find(eventlog.IterStart, "big")
	midStart, _ := d.log.find(eventlog.IterStart, "mid")
	if midStart.Lane == bigStart.Lane || bigStart.Lane != split.Lane {
		t.Errorf("big started in lane %d, mid in lane %d, the split kept lane %d", bigStart.Lane, midStart.Lane, split.Lane)
	}
	big.End(time.Millisecond, 0)
	mid.End(time.Millisecond, 0)
	big.Close(true)
	mid.Close(true)
}
