package podstate

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func ev(sec int, typ, reason, msg string) Event {
	return Event{Time: at(sec), Type: typ, Reason: reason, Object: "spec.containers{app}", Message: msg}
}

func TestNewEvents(t *testing.T) {
	pulled := ev(1, "Normal", "Pulled", "Container image present")
	created := ev(2, "Normal", "Created", "Created container: app")
	started := ev(3, "Normal", "Started", "Started container app")
	backoff := ev(4, "Warning", "BackOff", "Back-off restarting failed container app")
	backoffAgain := ev(9, "Warning", "BackOff", "Back-off restarting failed container app")
	// The same event after a trip through JSON: no monotonic reading, and
	// here another location.
	paris := time.FixedZone("CEST", 2*3600)
	createdElsewhere := created
	createdElsewhere.Time = created.Time.In(paris)

	cases := []struct {
		name       string
		prev, next []Event
		want       []Event
	}{
		{"none at all", nil, nil, nil},
		{"nothing new", []Event{pulled, created}, []Event{pulled, created}, nil},
		{"the first events", nil, []Event{pulled, created}, []Event{pulled, created}},
		{"appended", []Event{pulled}, []Event{pulled, created, started}, []Event{created, started}},
		{"the same times in another location", []Event{pulled, createdElsewhere}, []Event{pulled, created, started}, []Event{started}},
		{"a repeat is new", []Event{backoff}, []Event{backoff, backoff}, []Event{backoff}},
		{"trimmed, the same times in another location", []Event{pulled, createdElsewhere}, []Event{created, started}, []Event{started}},
		{"trimmed at the front", []Event{pulled, created, started}, []Event{created, started, backoff}, []Event{backoff}},
		// As the kubelet's event correlator would update a repeated event:
		// same event, later time (and a count, were there one).
		{"updated in place", []Event{started, backoff}, []Event{started, backoffAgain}, []Event{backoffAgain}},
		{"out of order, repeats counted", []Event{pulled, created}, []Event{created, pulled, pulled}, []Event{pulled}},
		{"snapshots swapped", []Event{pulled, created}, []Event{pulled}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NewEvents(Snapshot{Events: tc.prev}, Snapshot{Events: tc.next})
			if len(got) != len(tc.want) || (len(got) > 0 && !reflect.DeepEqual(got, tc.want)) {
				t.Errorf("NewEvents = %+v, want %+v", got, tc.want)
			}
			if len(tc.want) == 0 && got != nil {
				t.Errorf("NewEvents = %#v, want nil", got)
			}
		})
	}
}

// The events returned share next's array but cannot grow into it.
func TestNewEventsAppendDoesNotClobber(t *testing.T) {
	next := Snapshot{Events: make([]Event, 2, 10)}
	next.Events[0] = ev(1, "Normal", "Pulled", "a")
	next.Events[1] = ev(2, "Normal", "Created", "b")
	got := NewEvents(Snapshot{Events: next.Events[:1]}, next)
	got = append(got, ev(3, "Normal", "Started", "c"))
	if full := next.Events[:3]; full[2].Reason != "" {
		t.Errorf("appending to NewEvents' result wrote into next: %+v", full[2])
	}
	if len(got) != 2 || got[0].Reason != "Created" {
		t.Errorf("got %+v", got)
	}
}

// Snapshots the Tracker takes step by step give each event once.
func TestNewEventsFromTrackerSnapshots(t *testing.T) {
	for _, sc := range scenarios() {
		snaps := sc.run()
		var all []Event
		for i := 1; i < len(snaps); i++ {
			all = append(all, NewEvents(snaps[i-1], snaps[i])...)
		}
		last := snaps[len(snaps)-1].Events
		if len(all) != len(last) || (len(all) > 0 && !reflect.DeepEqual(all, last)) {
			t.Errorf("%s: the steps' new events are %+v, the pod's events %+v", sc.name, all, last)
		}
	}
}

// A snapshot read back from JSON (as a recording would be) compares with a
// live one.
func TestNewEventsAfterJSON(t *testing.T) {
	_, snaps := scenarioNamed(t, "hello")
	b, err := json.Marshal(snaps[4])
	if err != nil {
		t.Fatal(err)
	}
	var prev Snapshot
	if err := json.Unmarshal(b, &prev); err != nil {
		t.Fatal(err)
	}
	got := NewEvents(prev, snaps[5])
	if len(got) != 1 || got[0].Reason != "Started" {
		t.Errorf("NewEvents after JSON = %+v, want the Started event", got)
	}
	if d := Diff(prev, snaps[5]); len(d) != 8 {
		t.Errorf("Diff after JSON has %d changes, want 8: %+v", len(d), d)
	}
}
