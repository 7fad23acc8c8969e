package watch

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/proxy"
)

// The kubelet's PLEG, kubelet v1.37: GenericPLEG.Relist
// (pkg/kubelet/pleg/generic.go) runs every genericPlegRelistPeriod, 1 s
// (pkg/kubelet/kubelet.go), and lists every pod of the node through
// kubeGenericRuntimeManager.GetPods(ctx, true): a ListPodSandbox, then a
// ListContainers, each with an empty filter (listOptions.sandboxFilter,
// containerFilter: no pod UID, no state; pkg/kubelet/kuberuntime/
// kuberuntime_container.go). Once both answered it records the time
// the relist began as its last relist. GenericPLEG.Healthy is false once
// that time is older than genericPlegRelistThreshold, 3 min: the kubelet's
// runtimeState.runtimeErrors says "PLEG is not healthy: pleg was last seen
// active ...; threshold is 3m0s", the node's Ready condition turns False
// (NotReady) and syncLoop syncs no pod until a relist goes through. A
// runtime that answers the lists slowly, or not at all, does that. The
// EventedPLEG feature gate does not change it (v1.37: its event stream only
// asks GenericPLEG for relists sooner).
const (
	// PLEGRelistPeriod is the kubelet's relist period (genericPlegRelistPeriod).
	PLEGRelistPeriod = time.Second
	// PLEGThreshold is the age of the last relist past which the kubelet's
	// PLEG is unhealthy (genericPlegRelistThreshold).
	PLEGThreshold = 3 * time.Minute
)

// plegSteps are the ages of the last relist at which the proxy says it is
// late; past PLEGThreshold, every 5 minutes.
var plegSteps = []time.Duration{5 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, PLEGThreshold}

func nextPLEG(n int) time.Duration {
	if n < len(plegSteps) {
		return plegSteps[n]
	}
	return PLEGThreshold + time.Duration(n-len(plegSteps)+1)*5*time.Minute
}

// PLEGNote is what the watcher says about the kubelet's relists
// (Options.OnPLEG). Event is "late" (the last relist is older than one
// more of 5 s, 30 s, 1 m, 2 m), "unhealthy" (older than PLEGThreshold,
// then every 5 m) or "relisted" (a relist went through again after a late
// one was said). The proxy says nothing before it saw two relists
// PLEGRelistPeriod apart (a kubelet's generic PLEG, not crictl's lists).
type PLEGNote struct {
	Event string `json:"event"`
	// LastRelist is when the last relist that went through began, AgeMs
	// its age at At, ThresholdMs PLEGThreshold.
	LastRelist  time.Time `json:"last_relist"`
	At          time.Time `json:"at"`
	AgeMs       int64     `json:"age_ms"`
	ThresholdMs int64     `json:"threshold_ms"`
	// Open is the relist's call still in flight, the oldest, if any.
	Open *PLEGCall `json:"open,omitempty"`
}

// PLEGCall is a relist's call in flight.
type PLEGCall struct {
	Seq    uint64    `json:"seq"`
	Method string    `json:"method"`
	Sent   time.Time `json:"sent"`
	AgeMs  int64     `json:"age_ms"`
}

// Line is the note as a line of text.
func (n PLEGNote) Line() string {
	ago := age(time.Duration(n.AgeMs) * time.Millisecond)
	var l string
	switch n.Event {
	case "relisted":
		return "pleg: the kubelet relisted again; its previous relist was " + ago + " before"
	case "unhealthy":
		l = "pleg: the kubelet's last relist was " + ago + " ago: PLEG is not healthy (over " + PLEGThreshold.String() +
			", GenericPLEG.Healthy): the node is NotReady and the kubelet syncs no pod until a relist goes through"
	default:
		l = "pleg: the kubelet's last relist was " + ago + " ago (every " + PLEGRelistPeriod.String() + " when the runtime answers; PLEG turns unhealthy at " +
			PLEGThreshold.String() + ": the node goes NotReady)"
	}
	if n.Open != nil {
		l += "; waiting on " + n.Open.Method + " #" + strconv.FormatUint(n.Open.Seq, 10) + " " + age(time.Duration(n.Open.AgeMs)*time.Millisecond) + ", no answer"
	}
	return l
}

// plegState follows the kubelet's relists (w.mu held to use).
type plegState struct {
	start    time.Time // the current relist's ListPodSandbox arrived
	last     time.Time // the last relist that went through began
	periodic bool      // two relists seen about PLEGRelistPeriod apart
	said     int       // the ages said of the last relist
	late     bool      // a late relist was said, no relist went through on time since
	open     map[uint64]PLEGCall
	note     PLEGNote // the newest note (NodeNote), Event "" before the first
}

// relistCall says whether req is one of the kubelet's PLEG relist calls: a
// ListPodSandbox or ListContainers with no filter.
func relistCall(req proto.Message) (string, bool) {
	switch r := req.(type) {
	case *runtimeapi.ListPodSandboxRequest:
		f := r.GetFilter()
		return "ListPodSandbox", f.GetId() == "" && f.GetState() == nil && len(f.GetLabelSelector()) == 0
	case *runtimeapi.ListContainersRequest:
		f := r.GetFilter()
		return "ListContainers", f.GetId() == "" && f.GetState() == nil && f.GetPodSandboxId() == "" && len(f.GetLabelSelector()) == 0
	}
	return "", false
}

// plegArrived notes a relist call as it arrives (w.mu held).
func (w *Watcher) plegArrived(c *proxy.Call, req proto.Message) {
	m, ok := relistCall(req)
	if !ok {
		return
	}
	now := w.opts.Now()
	if w.pleg.open == nil {
		w.pleg.open = map[uint64]PLEGCall{}
	}
	w.pleg.open[c.Seq] = PLEGCall{Seq: c.Seq, Method: m, Sent: now}
	if m == "ListPodSandbox" {
		w.pleg.start = now
	}
}

// plegDone notes a relist call's answer (w.mu held): a ListContainers
// answered after the relist's ListPodSandbox is a relist gone through.
func (w *Watcher) plegDone(c *proxy.Call, req proto.Message) {
	m, ok := relistCall(req)
	if !ok {
		return
	}
	delete(w.pleg.open, c.Seq)
	p := &w.pleg
	if c.Err != nil || p.start.IsZero() {
		p.start = time.Time{} // GetPods failed: no relist time recorded
		return
	}
	if m != "ListContainers" {
		return
	}
	if !p.last.IsZero() && p.start.Sub(p.last) <= 3*PLEGRelistPeriod {
		p.periodic = true
	}
	prev := p.last
	p.last, p.start = p.start, time.Time{}
	// The ages already past for this relist (one that began long ago
	// and was answered late) are not said again.
	now := w.opts.Now()
	p.said = 0
	for now.Sub(p.last) >= nextPLEG(p.said) {
		p.said++
	}
	if p.late && p.said == 0 && p.periodic {
		p.late = false
		w.notePLEG("relisted", prev, p.last)
	}
}

// checkPLEG says a late relist (w.mu held; the tick).
func (w *Watcher) checkPLEG() {
	p := &w.pleg
	if !p.periodic || p.last.IsZero() {
		return
	}
	now := w.opts.Now()
	a := now.Sub(p.last)
	if a < nextPLEG(p.said) {
		return
	}
	for a >= nextPLEG(p.said) {
		p.said++
	}
	ev := "late"
	p.late = true
	if a >= PLEGThreshold {
		ev = "unhealthy"
	}
	w.notePLEG(ev, p.last, now)
}

// notePLEG queues a note for Options.OnPLEG (w.mu held): the relist
// that began at last, at now ("relisted": now is the next relist's start).
func (w *Watcher) notePLEG(event string, last, now time.Time) {
	n := PLEGNote{Event: event, LastRelist: last, At: now, AgeMs: now.Sub(last).Milliseconds(), ThresholdMs: PLEGThreshold.Milliseconds()}
	for _, o := range w.pleg.open {
		if event == "relisted" {
			break
		}
		if n.Open == nil || o.Sent.Before(n.Open.Sent) || o.Sent.Equal(n.Open.Sent) && o.Seq < n.Open.Seq {
			o := o
			n.Open = &o
		}
	}
	if n.Open != nil {
		n.Open.AgeMs = now.Sub(n.Open.Sent).Milliseconds()
	}
	// The TUIs of the pods followed re-read it (Pod.NodeNote).
	w.pleg.note = n
	w.pokes = append(w.pokes, w.list...)
	if w.opts.OnPLEG != nil {
		w.plegQ = append(w.plegQ, n)
	}
}

// NodeNote is what the node as a whole is stuck on, for the TUI
// (tui.NodeNoter): the newest PLEG note's line while the kubelet's relists
// are late ("" once one went through again, or before any was late), and
// whether PLEG is unhealthy (the node is NotReady).
func (p *Pod) NodeNote() (line string, severe bool) {
	p.w.mu.Lock()
	n := p.w.pleg.note
	p.w.mu.Unlock()
	if n.Event == "" || n.Event == "relisted" {
		return "", false
	}
	return n.Line(), n.Event == "unhealthy"
}
