package workload

// Priorities maps the trace's jobs to their priorities (a smaller number is more
// urgent), or returns nil when they all have the same one: figures per priority
// class would then repeat the totals.
func (t *Trace) Priorities() map[string]int {
	m := make(map[string]int, len(t.Jobs))
	several := false
	for _, j := range t.Jobs {
		m[j.ID] = j.Priority
		several = several || j.Priority != t.Jobs[0].Priority
	}
	if !several {
		return nil
	}
	return m
}
