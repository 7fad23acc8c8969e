package podstate

import "time"

// NewEvents returns the events next has that prev does not: those recorded
// between the two snapshots, oldest first; nil when there are none.
//
// The Tracker only appends (each Record is one event, repeats included; it
// does not aggregate repeats into a count as the kubelet's event correlator
// does, nor trim old events), so next's events normally start with all of
// prev's and the new ones are the rest; that slice is returned, without a
// copy. Otherwise (snapshots taken out of order, a list trimmed at the
// front, or an event updated in place, as aggregation would update a
// repeat's count and time) every event of next that prev does not hold is
// new, kept in next's order and counted as a multiset: an event recorded
// twice is new once if prev held it once.
func NewEvents(prev, next Snapshot) []Event {
	p, n := prev.Events, next.Events
	if len(p) <= len(n) && samePrefix(p, n) {
		if len(p) == len(n) {
			return nil
		}
		return n[len(p):len(n):len(n)]
	}
	held := make(map[Event]int, len(p))
	for _, e := range p {
		held[eventKey(e)]++
	}
	var out []Event
	for _, e := range n {
		k := eventKey(e)
		if held[k] > 0 {
			held[k]--
			continue
		}
		out = append(out, e)
	}
	return out
}

func samePrefix(p, n []Event) bool {
	for i := range p {
		if !sameEvent(p[i], n[i]) {
			return false
		}
	}
	return true
}

// sameEvent compares two events field by field, times as instants (a time
// that went through JSON has lost its monotonic reading and location).
func sameEvent(a, b Event) bool {
	return a.Time.Equal(b.Time) && withoutTime(a) == withoutTime(b)
}

func withoutTime(e Event) Event {
	e.Time = time.Time{}
	return e
}

// eventKey is e with its time normalised, so that events sameEvent finds
// equal are equal map keys.
func eventKey(e Event) Event {
	e.Time = e.Time.UTC() // drops the monotonic reading too
	return e
}
