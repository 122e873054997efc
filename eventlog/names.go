package eventlog

import "hash/maphash"

// names finds a tracker's jobs by name: the latest job of each name. It is an
// open-addressing table of pointers (linear probing, kept at most three
// quarters full), where a map[string]*JobState takes a slot of 24 bytes and
// its control byte: a tracker holds every job of a log to its end, a million
// at a million jobs, and this takes about a third of the map's memory. Names
// are never removed; a job of a name that comes again takes its slot.
type names struct {
	seed  maphash.Seed
	slots []*JobState // nil: empty; len is a power of two
	n     int
}

// get returns the job named id; nil when none is.
func (x *names) get(id string) *JobState {
	if x.n == 0 {
		return nil
	}
	mask := len(x.slots) - 1
	for i := x.home(id, mask); ; i = (i + 1) & mask {
		j := x.slots[i]
		if j == nil || j.ID == id {
			return j
		}
	}
}

// put makes j the job of its name.
func (x *names) put(j *JobState) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
	}
	mask := len(x.slots) - 1
	for i := x.home(j.ID, mask); ; i = (i + 1) & mask {
		if old := x.slots[i]; old == nil || old.ID == j.ID {
			if old == nil {
				x.n++
			}
			x.slots[i] = j
			return
		}
	}
}

// each calls fn on the job of each name, in no particular order.
func (x *names) each(fn func(*JobState)) {
	for _, j := range x.slots {
		if j != nil {
			fn(j)
		}
	}
}

func (x *names) home(id string, mask int) int {
	return int(maphash.String(x.seed, id) & uint64(mask))
}

// grow doubles the table (at first, makes it).
func (x *names) grow() {
	old := x.slots
	if len(old) == 0 {
		x.seed = maphash.MakeSeed()
		x.slots = make([]*JobState, 64)
		return
	}
	x.slots, x.n = make([]*JobState, 2*len(old)), 0
	for _, j := range old {
		if j != nil {
			x.put(j)
		}
	}
}
