package metrics

// TimeUnit is the unit a report shows times in, chosen from the longest of them
// (UnitFor), so that a 40-second live run reads in seconds and a day-long trace
// in hours. Tables, plots and pages use the same rule.
type TimeUnit struct {
	Name  string  // "s", "min" or "h"
	Scale float64 // multiply seconds by this
}

// Minutes is the unit of the paper's figures.
var Minutes = TimeUnit{"min", 1.0 / 60}

// UnitFor picks seconds below 5 minutes, hours from 48 hours, else minutes.
func UnitFor(longestS float64) TimeUnit {
	switch {
	case longestS < 5*60:
		return TimeUnit{"s", 1}
	case longestS >= 48*3600:
		return TimeUnit{"h", 1.0 / 3600}
	}
	return Minutes
}

// Word is the unit's name in a sentence: seconds, minutes or hours.
func (u TimeUnit) Word() string {
	switch u.Name {
	case "s":
		return "seconds"
	case "h":
		return "hours"
	}
	return "minutes"
}
