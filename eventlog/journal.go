package eventlog

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A daemon's journal: an event log appended to for as long as the daemon runs, and
// read back by the daemon that restarts on it.
//
// Writes never give up. An Appender keeps the lines it could not write (a full
// disk, a file-size limit) and writes them, in order, at its next successful
// write: the file is always a prefix of the events emitted, never a log with a
// hole. Whoever drives it learns of a failure from TryEmit and Flush, and decides
// what to do meanwhile (the daemon stops granting work: server.Config.OnJournalError).
//
// Rotation keeps a restart's reading bounded. Rotate renames the file to a
// segment, PATH.000001, PATH.000002, ... (oldest first), and starts PATH anew
// with a snapshot record: the sessions open at that instant, which is all a
// restarted daemon needs of the segments before. ReadFile reads the segments and
// PATH in order, as one log; a restart reads only from the newest file that begins
// with a snapshot (ReadFromSnapshot). The snapshot line is state, not history:
// readers that compute from the log's history (metrics, plots) skip it, so a run's
// metrics are the same whether or not its journal was rotated. Segments may be
// compressed (PATH.000001.gz) or, once no report needs them, removed: a reader
// then starts at the oldest segment left, from its snapshot (Tracker.Step).

// DefaultMaxPending bounds the bytes of events an Appender keeps while it cannot
// write them (SetMaxPending).
const DefaultMaxPending = 64 << 20

// ErrPendingFull says an event was dropped: the Appender already keeps its
// maximum of events it could not write.
var ErrPendingFull = errors.New("the journal cannot be written and keeps its maximum of unwritten events: this one was dropped")

// Appender appends events to a journal file. It is safe for concurrent use.
type Appender struct {
	mu   sync.Mutex
	path string // "": not a file (NewAppender), no rotation
	f    *os.File
	w    io.Writer
	// buf holds the encoded lines not written yet: buffered ones (without
	// SetFlushEach), and those a failed write left.
	buf  []byte
	line []byte
	each bool
	// prefix: the file's last line was cut off; the first event starts a new one.
	prefix bool
	// err is the last write's error, nil once a write succeeded.
	err        error
	maxPending int
	dropped    int64
	// active is the bytes written to the active file (PATH), snap the size of
	// the snapshot it began with; seg the number of the last segment.
	active, snap int64
	seg          int
	// stop ends the FlushEvery goroutine, which closes stopped.
	stop, stopped chan struct{}
}

// NewAppender returns an Appender that writes to w (a journal that is not a
// file: it cannot rotate). Its writes are retried like a file's.
func NewAppender(w io.Writer) *Appender {
	return &Appender{w: w, maxPending: DefaultMaxPending}
}

// OpenAppend opens path to add events to the log in it, creating it if needed: it
// never truncates what is there, so a daemon restarted on its log keeps the
// history of the runs before. When the file's last line was cut off (its writer
// crashed in the middle of it), the first event appended starts a new line, and
// the cut line stays as it was, on a line of its own (Read reports it and goes on
// when a run header follows it, as a restarted daemon's does). A new file is
// made 0600 (the journal holds job names, owners' uids and token hashes), as are
// the files a rotation makes; an existing one keeps its mode. A gzip stream
// cannot be appended to: a name ending in .gz is an error.
func OpenAppend(path string) (*Appender, error) {
	if strings.HasSuffix(path, ".gz") {
		return nil, fmt.Errorf("%s: a compressed log cannot be appended to: give a name without .gz (and compress the log afterwards if you like)", path)
	}
	segs, err := Segments(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, notALink(path, err)
	}
	a := &Appender{path: path, f: f, w: f, maxPending: DefaultMaxPending}
	if len(segs) > 0 {
		a.seg, _ = segmentNumber(path, segs[len(segs)-1])
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%v): give the path of a file for the journal", path, fi.Mode().Type())
	}
	if n := fi.Size(); n > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], n-1); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		a.prefix = last[0] != '\n'
		a.active = n
	}
	return a, nil
}

// SetFlushEach makes every later event go out at once, in one write of its whole
// line: a process killed at any moment (kill -9) then loses no event it emitted,
// and leaves no line cut in the middle (a write to a regular file is not
// interrupted by a signal). Without it, events are buffered until Flush.
func (a *Appender) SetFlushEach(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.each = on
}

// SetMaxPending bounds the bytes of events kept while they cannot be written
// (DefaultMaxPending); beyond it an event is dropped, and counted (Dropped).
func (a *Appender) SetMaxPending(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.maxPending = n
}

// Emit adds e; an error is kept for TryEmit, Flush and Close to report.
func (a *Appender) Emit(e Event) { a.TryEmit(e) }

// TryEmit adds e and, with SetFlushEach, writes it and whatever the last writes
// left. It returns nil when nothing is left unwritten (with SetFlushEach: e is in
// the file), else the last write's error: e is kept, and written, in order, by
// the next write that succeeds. Without SetFlushEach it buffers, writing once
// 64 KiB are waiting, and returns the error of the last write that failed, if no
// write succeeded since.
func (a *Appender) TryEmit(e Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.queue(e); err != nil {
		return err
	}
	if a.each || len(a.buf) >= bufferSize && a.err == nil {
		a.write()
	}
	return a.err
}

// bufferSize is how much a buffered Appender holds before it writes.
const bufferSize = 64 << 10

// Queue adds e to the events waiting to be written, without writing: what a
// caller does while it knows the journal cannot be written, so that its retries
// (Flush) decide when writes are tried. It fails only when e is dropped
// (ErrPendingFull).
func (a *Appender) Queue(e Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queue(e)
}

func (a *Appender) queue(e Event) error {
	a.line = append(Append(a.line[:0], e), '\n')
	if len(a.buf) > 0 && a.err != nil && len(a.buf)+len(a.line) > a.maxPending {
		a.dropped++
		return fmt.Errorf("%w (%d bytes kept; last write error: %v)", ErrPendingFull, len(a.buf), a.err)
	}
	if a.prefix {
		a.buf, a.prefix = append(a.buf, '\n'), false
	}
	a.buf = append(a.buf, a.line...)
	return nil
}

// write writes buf, keeping what did not go out.
func (a *Appender) write() {
	if len(a.buf) == 0 {
		a.err = nil
		return
	}
	n, err := a.w.Write(a.buf)
	if n > 0 {
		a.active += int64(n)
		a.buf = a.buf[:copy(a.buf, a.buf[n:])]
	}
	if err == nil && len(a.buf) > 0 {
		err = io.ErrShortWrite
	}
	a.err = err
	if err == nil && cap(a.buf) > 1<<20 {
		a.buf = nil // a backlog's buffer goes back to the heap
	}
}

// Flush writes what is waiting and returns the error when some of it could not
// be written (it is kept for the next Flush).
func (a *Appender) Flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.write()
	return a.err
}

// Pending returns the bytes of events not written yet.
func (a *Appender) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.buf)
}

// Dropped returns how many events were dropped (ErrPendingFull).
func (a *Appender) Dropped() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dropped
}

// SinceRotation returns the bytes written to the active file after the snapshot
// it began with (all of it, for a file never rotated): what rotation bounds.
func (a *Appender) SinceRotation() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.active - a.snap
}

// Rotate renames the file to the next segment (PATH.000001, ...) and starts the
// file anew with snapshot, after writing what is buffered: it fails when that
// cannot be written. On failure the file is as it was and the Appender goes on
// writing to it. The new file is written whole and synced under a temporary
// name (PATH.rotating) before it takes PATH's place, so that a crash (kill -9)
// inside the snapshot's write, however long, leaves PATH as it was: a cut
// snapshot is never in force. A crash between the two renames leaves the
// segments whole and no PATH: a restart reads the newest segment that begins
// with a whole snapshot (ReadFromSnapshot), and finds what the snapshot would
// have said.
func (a *Appender) Rotate(snapshot Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.path == "" {
		return errors.New("rotate: this journal is not a file")
	}
	if a.write(); a.err != nil {
		return fmt.Errorf("rotate %s: %d bytes of events cannot be written: %w", a.path, len(a.buf), a.err)
	}
	line := append(Append(nil, snapshot), '\n')
	if len(line) > maxLine {
		return fmt.Errorf("rotate %s: its snapshot of %d sessions would be a line of %d bytes, longer than the %d a reader takes: the journal goes on in its file", a.path, len(snapshot.Open), len(line), maxLine)
	}
	seg := a.seg + 1
	name := SegmentName(a.path, seg)
	for {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			break
		}
		seg++
		name = SegmentName(a.path, seg)
	}
	// PATH.rotating is made anew, never opened as found: a link planted there
	// (or a file another user made) is removed, or the rotation fails.
	tmp := a.path + ".rotating"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err == nil {
		if err = writeSnapshot(f, line); err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rotate: cannot write the snapshot that begins %s anew: %w", a.path, err)
	}
	if err := os.Rename(a.path, name); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("rotate: %w", err)
	}
	if err := os.Rename(tmp, a.path); err != nil {
		f.Close()
		os.Remove(tmp)
		if rerr := os.Rename(name, a.path); rerr != nil {
			// The open file is the segment now: writes go on there, and a
			// restart reads it (ReadFromSnapshot), so nothing is lost.
			return fmt.Errorf("rotate: cannot start %s anew (%v), nor rename %s back (%v): the journal goes on in %s", a.path, err, name, rerr, name)
		}
		return fmt.Errorf("rotate: cannot start %s anew with its snapshot: %w", a.path, err)
	}
	syncDir(filepath.Dir(a.path)) // the renames, on disk; a failure loses nothing a crash of the process would
	a.f.Close()                   // every byte was written: a close error loses nothing
	a.f, a.w, a.seg = f, f, seg
	a.active, a.snap = int64(len(line)), int64(len(line))
	return nil
}

// notALink explains an open refused because the name is a symbolic link
// (ELOOP from O_NOFOLLOW); other errors go back as they are.
func notALink(path string, err error) error {
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link, and a journal's files are not opened through one (another user may have planted it): give the file's real path, or remove the link if you did not make it", path)
	}
	return err
}

// writeSnapshot writes a rotation's snapshot line (a test's hook, to die
// inside it).
var writeSnapshot = func(f *os.File, line []byte) error {
	_, err := f.Write(line)
	return err
}

// syncDir syncs the directory dir, so that a rename in it is on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// FlushEvery flushes every d from now on, until Close: a process killed (kill -9)
// then loses at most the last d of events, and may leave its last line cut (Read
// reports it). SetFlushEach loses none, for a write per event.
func (a *Appender) FlushEvery(d time.Duration) {
	if d <= 0 || a.stop != nil {
		return
	}
	a.stop, a.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(a.stopped)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-a.stop:
				return
			case <-t.C:
				a.Flush() // an error stays, for TryEmit and Close to return
			}
		}
	}()
}

// Close flushes and closes the file. An error says what could not be written.
func (a *Appender) Close() error {
	if a.stop != nil {
		close(a.stop)
		<-a.stopped
		a.stop = nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.write()
	err := a.err
	if err != nil {
		err = fmt.Errorf("%d bytes of events could not be written: %w", len(a.buf), err)
	}
	if a.f != nil {
		if e := a.f.Close(); err == nil {
			err = e
		}
	}
	return err
}

// SegmentName is the name of rotated segment n of the journal at path.
func SegmentName(path string, n int) string { return fmt.Sprintf("%s.%06d", path, n) }

// segmentNumber returns n of a segment's name (PATH.000001 or PATH.000001.gz).
func segmentNumber(path, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, path+".")
	if !ok {
		return 0, false
	}
	rest = strings.TrimSuffix(rest, ".gz")
	if len(rest) < 6 || strings.Trim(rest, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// Segments returns the rotated segments of the journal at path, oldest first
// (PATH.000001, PATH.000002, ..., each possibly compressed: .gz); none for a log
// that was never rotated.
func Segments(path string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type seg struct {
		n    int
		name string
	}
	var segs []seg
	base := filepath.Base(path)
	for _, e := range entries {
		if n, ok := segmentNumber(base, e.Name()); ok && !e.IsDir() {
			segs = append(segs, seg{n, filepath.Join(filepath.Dir(path), e.Name())})
		}
	}
	slices.SortFunc(segs, func(a, b seg) int { return a.n - b.n })
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s.name
	}
	return out, nil
}

// files returns the files of the log at path in order: its segments, then path
// when it exists. None: os.ErrNotExist.
func files(path string) ([]string, error) {
	segs, err := Segments(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil || len(segs) == 0 {
		segs = append(segs, path) // a missing path alone fails on opening, as it always did
	}
	return segs, nil
}

// ReadFromSnapshot reads the journal at path as a daemon restarting on it needs
// it: from the newest of its files that begins with a snapshot (the file itself,
// in a journal rotated at least once) to its end; the whole log when none does
// (a journal never rotated, or an older daemon's). It returns the files read.
func ReadFromSnapshot(path string, fn func(Event) error) ([]string, error) {
	all, err := files(path)
	if err != nil {
		return nil, err
	}
	from := 0
	for i := len(all) - 1; i > 0; i-- {
		if ok, err := beginsWithSnapshot(all[i]); err != nil {
			return nil, err
		} else if ok {
			from = i
			break
		}
	}
	return all[from:], readFiles(all[from:], fn)
}

// beginsWithSnapshot reports whether the log file's first line is a snapshot.
func beginsWithSnapshot(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(256)
	// Append writes the kind second: {"t":...,"ev":"snapshot",...
	first, _, _ := strings.Cut(string(head), "\n")
	if !strings.Contains(first, `"ev":"`+Snapshot+`"`) {
		return false, nil
	}
	// A snapshot cut by a crash (an older daemon wrote it in place) is none:
	// the file before holds the state.
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull && len(line) <= maxLine {
			continue
		}
		if err != nil {
			return false, nil
		}
		break
	}
	e, ok, err := decodeLine(line, path, 1)
	return err == nil && ok && e.Kind == Snapshot, nil
}

// readFiles reads logs one after the other, as one log. A cut line in one of
// them (ErrTruncated) does not stop the others; the first is returned at the end.
func readFiles(paths []string, fn func(Event) error) error {
	var cut error
	for _, p := range paths {
		err := readOne(p, fn)
		switch {
		case err == nil:
		case errors.Is(err, ErrTruncated):
			if cut == nil {
				cut = err
			}
		default:
			return err
		}
	}
	return cut
}
