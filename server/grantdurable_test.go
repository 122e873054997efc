package server_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

// startDisk is a journal's file system that fills exactly when an iteration's
// start is written: while armed, a write holding an iter_start fails with
// ENOSPC, writing nothing, as does every write after it until disarmed.
type startDisk struct {
	mu          sync.Mutex
	b           bytes.Buffer
	armed, full bool
}

func (d *startDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed && (d.full || bytes.Contains(p, []byte(`"ev":"iter_start"`))) {
		d.full = true
		return 0, &os.PathError{Op: "write", Path: "live.jsonl", Err: syscall.ENOSPC}
	}
	return d.b.Write(p)
}

func (d *startDisk) set(armed bool) {
	d.mu.Lock()
	d.armed, d.full = armed, d.full && armed
	d.mu.Unlock()
}

// starts counts the iteration starts of job on the disk.
func (d *startDisk) starts(job string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.Count(d.b.Bytes(), []byte(`"ev":"iter_start","job":"`+job+`"`))
}

// No grant is acknowledged before its start is in the journal: the disk fills
// exactly at the write of the start event of a begin's grant, and of an end
// with next's; the grant is not answered while the disk is full, and is
// answered, with its start on the disk, once there is room again. (Before, the
// decision's grant went out with its start event left unwritten: 1 grant in
// 28,418 was acknowledged without its start on disk when a disk filled.)
func TestGrantWaitsForItsStartOnDisk(t *testing.T) {
	dk := &startDisk{}
	log := eventlog.NewAppender(dk)
	log.SetFlushEach(true)
	d := start(t, "fair", 14000, func(c *server.Config) { c.Log = log })
	a := rawConn(t, d)
	if rep := a.call(`{"op":"open","id":1,"version":1,"job":"a","persistent_mib":100,"ephemeral_mib":100}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	id := 2
	for i, op := range []string{`{"op":"begin","id":ID}`, `{"op":"end","id":ID,"next":true}`, `{"op":"end","id":ID,"next":true}`} {
		if i == 1 { // the end and next's end event goes out; its grant's start fills the disk
			if rep := a.call(strings.Replace(op, "ID", strconv.Itoa(id), 1)); rep["ok"] != true {
				t.Fatal(rep)
			}
			id++
			continue
		}
		before := dk.starts("a")
		dk.set(true)
		a.sendBytes(frame(strings.Replace(op, "ID", strconv.Itoa(id), 1)))
		id++
		until(t, "the journal said failing", func() bool { return d.Stats().Journal == "failing" })
		a.c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, err := a.c.Read(make([]byte, 1)); n > 0 || !isTimeout(err) {
			t.Fatalf("%s: the grant was answered while its start is not on the disk (%d bytes, %v; %d starts on the disk, %d before)", op, n, err, dk.starts("a"), before)
		}
		a.c.SetReadDeadline(time.Time{})
		dk.set(false)
		if rep := a.readFrame(); rep["ok"] != true {
			t.Fatalf("%s once there is room: %v", op, rep)
		}
		if n := dk.starts("a"); n != before+1 {
			t.Errorf("%s: granted with %d starts on the disk, want %d", op, n, before+1)
		}
	}
	a.call(`{"op":"close","id":99}`)
}
