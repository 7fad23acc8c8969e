package podstate

import (
	"strings"
	"unicode/utf8"
)

// changeLabels name the pod-level changes in FormatChanges: the columns as
// `kubectl get pod -w` heads them, the status fields as `kubectl describe
// pod` labels them.
var changeLabels = map[string]string{
	FieldStatus:   "STATUS",
	FieldReady:    "READY",
	FieldRestarts: "RESTARTS",
	FieldPhase:    "phase",
	FieldReason:   "reason",
	FieldHostIP:   "host IP",
	FieldPodIP:    "IP",
}

// containerLabels name a container's attributes in FormatChanges; the
// state has none.
var containerLabels = map[string]string{
	"restartCount": "restarts ",
}

// FormatChanges says changes on one line, in their order, items separated
// by " · ", for example
//
//	STATUS ContainerCreating → Running · READY 0/1 → 1/1 · phase Pending → Running · Ready False → True · ContainersReady False → True · app: waiting ContainerCreating → running, ready, started
//
// The columns read STATUS, READY, RESTARTS; the status fields phase,
// reason, host IP, IP; a condition by its type; a container by its name
// then its changes, those of one container together: its state, "ready" or
// "not ready", "started" or "not started", "restarts 0 → 1". A value that
// appears reads as the value alone ("IP 10.88.0.5"), one that disappears
// as "from → <none>", <none> being kubectl's word for nothing. A field it
// does not know reads as its path. It returns "" for no changes. There is
// no colour: that is the frontend's business.
func FormatChanges(changes []Change) string {
	var b strings.Builder
	for i := 0; i < len(changes); i++ {
		c := changes[i]
		if i > 0 {
			b.WriteString(" · ")
		}
		name, _ := c.Container()
		if name == "" {
			label, ok := changeLabels[c.Field]
			if !ok {
				if label = c.Condition(); label == "" {
					label = c.Field
				}
			}
			b.WriteString(label)
			b.WriteByte(' ')
			writeFromTo(&b, c.From, c.To)
			continue
		}
		// One container's changes, while they follow one another.
		b.WriteString(name)
		b.WriteString(": ")
		for j := i; j < len(changes); j++ {
			if n, _ := changes[j].Container(); n != name {
				break
			}
			attr := changes[j].containerAttr()
			from, to := changes[j].From, changes[j].To
			if j > i {
				b.WriteString(", ")
			}
			i = j
			if (attr == "ready" || attr == "started") && (to == "true" || to == "false") {
				// A flag reads as its new value: "ready", "not started".
				if to == "false" {
					b.WriteString("not ")
				}
				b.WriteString(attr)
				continue
			}
			if label, ok := containerLabels[attr]; ok {
				b.WriteString(label)
			} else if attr != "state" {
				b.WriteString(attr)
				b.WriteByte(' ')
			}
			writeFromTo(&b, from, to)
		}
	}
	return b.String()
}

func writeFromTo(b *strings.Builder, from, to string) {
	switch {
	case from == "":
		b.WriteString(to)
	case to == "":
		b.WriteString(from)
		b.WriteString(" → <none>")
	default:
		b.WriteString(from)
		b.WriteString(" → ")
		b.WriteString(to)
	}
}

// FormatEvent says one event on one line as `kubectl get events` shows it:
// TYPE, REASON, OBJECT, MESSAGE, three spaces apart, for example
//
//	Normal   Pulled   pod/hello   Container image "busybox:1.35" already present on machine
//
// OBJECT is the involved object as kubectl names it, pod/<pod> (the event's
// Object, the field path of a container, is the SUBOBJECT column of
// `kubectl get events -o wide`, left out as the message names the
// container). LAST SEEN is left out too: under a step, the step's own time
// says when. To align several events, use FormatEvents.
func FormatEvent(pod string, e Event) string {
	return FormatEvents(pod, []Event{e})[0]
}

// FormatEvents says events one per line as FormatEvent does, with the
// columns aligned as kubectl's tab writer aligns them: each column as wide
// as its widest cell plus three spaces, and at least six.
func FormatEvents(pod string, evs []Event) []string {
	if len(evs) == 0 {
		return nil
	}
	object := "pod"
	if pod != "" {
		object = "pod/" + pod
	}
	tw, rw := 0, 0
	for _, e := range evs {
		tw = max(tw, utf8.RuneCountInString(e.Type))
		rw = max(rw, utf8.RuneCountInString(e.Reason))
	}
	ow := utf8.RuneCountInString(object)
	out := make([]string, len(evs))
	var b strings.Builder
	for i, e := range evs {
		b.Reset()
		pad(&b, e.Type, tw)
		pad(&b, e.Reason, rw)
		pad(&b, object, ow)
		b.WriteString(strings.TrimSpace(e.Message))
		out[i] = b.String()
	}
	return out
}

// Column layout of kubectl's tab writer (printers.GetNewTabWriter in
// k8s.io/cli-runtime): cells padded by three, columns at least six wide.
const (
	tabPadding  = 3
	tabMinWidth = 6
)

func pad(b *strings.Builder, cell string, width int) {
	b.WriteString(cell)
	n := max(width+tabPadding, tabMinWidth) - utf8.RuneCountInString(cell)
	for range n {
		b.WriteByte(' ')
	}
}
