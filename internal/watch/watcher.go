package watch

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/steps"
)

// The kubelet's labels on sandboxes and containers (pkg/kubelet/types/labels.go).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// OtherPods is the polling count of calls for pods not followed (--pod).
const OtherPods = "other pods' calls"

// Options configure a Watcher.
type Options struct {
	// Follow is the "namespace/name" of the one pod to follow; "" follows
	// every pod. Other pods' calls pass untouched and are not shown.
	Follow string
	// Redactor masks secrets in what is shown (registry credentials in
	// PullImage always); nil: a new one.
	Redactor *cri.Redactor
	// Quiet is how long a step of several calls (pull, relist, teardown,
	// probe) stays open after its last answer; 0: 150 ms.
	Quiet time.Duration
	// OnPod is called once for each followed pod, when it is first seen,
	// before any of its events.
	OnPod func(*Pod)
	// Hold, when set, may keep a followed pod's calls before they go
	// upstream.
	Hold *Hold
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// MaxPods is how many removed pods (RemovePodSandbox answered) the
	// watcher remembers; past it, it forgets the oldest: their steps,
	// calls and state (0: DefaultMaxPods).
	MaxPods int
	// OnForget is called for each pod forgotten (MaxPods), after its last
	// events: a frontend ends what it holds of the pod (a summary, a
	// recording).
	OnForget func(*Pod)
	// OnRemoved is called for each followed pod whose sandbox was removed
	// (RemovePodSandbox answered), after the events of that step: its
	// creation and teardown are over.
	OnRemoved func(*Pod)
	// Specs, when set, is where each followed pod's desired spec is read
	// (--kubeconfig, --manifest): once per pod UID, in the background; its
	// init containers are then staged "init" from their first call. Nil:
	// the stages are inferred (see the package comment) and nothing is read.
	Specs SpecSource
	// SpecTimeout bounds a spec's read, from when the pod is first seen;
	// the pod's first CreateContainer waits for it that long at most
	// (0: 5 s).
	SpecTimeout time.Duration
	// OnSpec is called once for each followed pod whose spec was asked
	// for, with where it came from or why there is none, before the
	// events that follow it.
	OnSpec func(*Pod, SpecNote)
	// RequestTimeout is the kubelet's runtimeRequestTimeout, from which
	// its deadline for a call that carries none is reckoned (0: 2m).
	RequestTimeout time.Duration
	// OnStuck is called with each followed pod's stuck-at notes (stuck.go):
	// a call open for one more of the view's ages, answered after it was
	// said, given up on by the kubelet; a pod that began or stopped
	// waiting. It must not block; it may read the pod.
	OnStuck func(*Pod, StuckNote)
	// OnPLEG is called with the notes on the kubelet's PLEG relists
	// (pleg.go): the last one late, PLEG unhealthy, relisting again. It
	// must not block.
	OnPLEG func(PLEGNote)
}

// DefaultMaxPods is Options.MaxPods's default.
const DefaultMaxPods = 100

// Watcher attributes the calls through a proxy to pods and steps.
type Watcher struct {
	opts Options
	red  *cri.Redactor

	mu          sync.Mutex
	pods        map[string]*Pod // by UID
	list        []*Pod          // in the order first seen
	bySandbox   map[string]*Pod
	byContainer map[string]*ctr
	calls       map[uint64]*callInfo // in flight
	polling     map[string]int       // node-level calls by method
	active      *Pod                 // the pod the last creation call was for
	runtime     string               // the runtime's name, from a Version answer
	imageFor    *Pod                 // the pod of the last ImageStatus with annotations
	queue       []queued             // events to deliver (deliver)
	newPods     []*Pod               // followed pods not announced yet
	removed     []*Pod               // removed pods still remembered, oldest first
	forgotten   []*Pod               // forgotten pods OnForget has not seen
	gone        []*Pod               // removed pods OnRemoved has not seen
	specNotes   []specQueued         // spec answers OnSpec has not seen
	csi         csiState             // CSI volumes (csi.go)
	tokensMu    sync.Mutex           // tokens: outside mu (arrived reads them before it takes mu)
	tokens      map[string]bool      // the service-account tokens values already told to the redactor
	names       map[string]*holder   // sandbox and container names held by a call (stuck.go)
	stuckQ      []stuckQueued        // stuck-at notes OnStuck has not seen
	pleg        plegState            // the kubelet's relists (pleg.go)
	plegQ       []PLEGNote           // PLEG notes OnPLEG has not seen
	pokes       []*Pod               // pods whose calls in flight aged a second

	deliverMu sync.Mutex // one delivery at a time, in queue order
	work      *serial    // the hooks' work, off the calls' path (Hooks)
	stop      chan struct{}
	stopOnce  sync.Once
}

type queued struct {
	pod *Pod
	ev  steps.Event
}

// callInfo is what arrived decided about a call.
type callInfo struct {
	pod       *Pod
	kind      steps.Kind
	container string
	req       proto.Message // as sent
	shown     proto.Message // redacted, as shown
	step      *openStep
	csi       *csiCall   // a call through a CSI driver's socket
	stuck     *stuckInfo // its age and deadline (stuck.go)
}

// New returns a watcher; its Hooks go to proxy.New. Close stops its timer.
func New(o Options) *Watcher {
	if o.Quiet == 0 {
		o.Quiet = 150 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxPods <= 0 {
		o.MaxPods = DefaultMaxPods
	}
	if o.SpecTimeout <= 0 {
		o.SpecTimeout = 5 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	w := &Watcher{opts: o, red: o.Redactor, pods: map[string]*Pod{}, bySandbox: map[string]*Pod{},
		byContainer: map[string]*ctr{}, calls: map[uint64]*callInfo{}, polling: map[string]int{}, stop: make(chan struct{}),
		work: newSerial()}
	if w.red == nil {
		w.red = &cri.Redactor{}
	}
	go w.tick()
	return w
}

// Hooks are the proxy hooks feeding the watcher (and its hold).
//
// Without a hold, the proxy only copies each call and queues it: the
// watcher decodes, redacts, attributes and delivers it on a goroutine of
// its own, in the order the calls arrived and were answered, so that what
// it shows costs the kubelet's calls nothing (the proxy's added latency).
// The queue keeps the order the synchronous hooks had: a call's answer is
// queued before the answer goes back, so the kubelet's next call is
// queued after it. With a hold, the gate needs the call's step before it
// lets it go: the hooks run on the call's path.
func (w *Watcher) Hooks() proxy.Hooks {
	if w.opts.Hold != nil {
		return proxy.Hooks{Arrived: w.arrived, Gate: w.gate, Done: w.done}
	}
	return proxy.Hooks{
		Arrived: func(c *proxy.Call) { a := *c; w.work.do(func() { w.arrived(&a) }) },
		Done:    func(c *proxy.Call) { d := *c; w.work.do(func() { w.done(&d) }) },
	}
}

// flush waits for the calls queued so far to be handled.
func (w *Watcher) flush() { w.work.flush() }

// Close stops the watcher's timer and closes every step still open.
func (w *Watcher) Close() {
	w.work.stop()
	w.stopOnce.Do(func() { close(w.stop) })
	w.mu.Lock()
	for _, p := range w.list {
		p.closeAll()
	}
	w.closeCSI()
	w.mu.Unlock()
	w.deliver()
}

// Pods lists the followed pods seen so far.
func (w *Watcher) Pods() []*Pod {
	w.flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*Pod
	for _, p := range w.list {
		if p.followed {
			out = append(out, p)
		}
	}
	return out
}

// Polling is the node-level calls seen, by method, and the calls of pods
// not followed.
func (w *Watcher) Polling() map[string]int {
	w.flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.polling))
	for k, v := range w.polling {
		out[k] = v
	}
	return out
}

// FormatPolling is the one counted line of node-level calls: "Version ×7,
// ListContainers ×30", most frequent first.
func FormatPolling(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	var parts []string
	for _, e := range l {
		parts = append(parts, e.k+" ×"+strconv.Itoa(e.v))
	}
	return strings.Join(parts, ", ")
}

// arrived decodes and attributes a call as it arrives.
func (w *Watcher) arrived(c *proxy.Call) {
	req := decode(c.Method, c.Request, false)
	if cr, ok := req.(*runtimeapi.CreateContainerRequest); ok && w.opts.Specs != nil {
		// The container is staged as its first call arrives: from the
		// spec, when its read is under way.
		w.awaitSpec(cr.GetPodSandboxId())
	}
	csiCall := isCSI(c)
	if csiCall {
		w.csiSecrets(req)
	}
	w.mu.Lock()
	info := w.classify(c, req)
	w.calls[c.Seq] = info
	w.plegArrived(c, req)
	if !c.Streaming {
		w.prepareStuck(info, c)
	}
	switch {
	case info.pod != nil && csiCall:
		info.step = info.pod.csiArrived(info, c, w.red.Redact(req))
	case info.pod != nil:
		info.step = info.pod.callArrived(info, c, w.red.Redact(req))
	case csiCall && info.csi.poll == "":
		info.shown = w.red.Redact(req)
	}
	w.mu.Unlock()
	w.deliver()
}

// gate holds a followed pod's call when the hold says so.
func (w *Watcher) gate(ctx context.Context, c *proxy.Call) {
	h := w.opts.Hold
	if h == nil {
		return
	}
	w.mu.Lock()
	info := w.calls[c.Seq]
	var stage steps.Stage
	var pod *Pod
	var name string
	var req proto.Message
	if info != nil && info.pod != nil && info.pod.followed && info.step != nil && !info.step.dropped {
		pod = info.pod
		stage, name, req = info.step.step.Stage, info.step.step.Name, info.shown
	}
	w.mu.Unlock()
	if pod == nil {
		return
	}
	h.wait(ctx, c, req, pod, stage, name)
}

// done decodes the answer and updates the pod. Node-level answers are
// decoded only when they can name pods podstep has not seen (the lists)
// or the runtime (Version).
func (w *Watcher) done(c *proxy.Call) {
	w.mu.Lock()
	info := w.calls[c.Seq]
	delete(w.calls, c.Seq)
	w.mu.Unlock()
	var resp proto.Message
	// A CSI call counted, not shown (stats, republish), is not decoded.
	shows := info != nil && (info.pod != nil || info.csi != nil && info.csi.poll == "")
	if c.Err == nil && !c.Streaming && (shows || learns[c.Name()]) {
		resp = decode(c.Method, c.Response, true)
	}
	var shown proto.Message
	var err error
	if shows {
		shown, err = w.red.Redact(resp), cutErr(w.red.Error(c.Err))
	}
	w.mu.Lock()
	if info != nil {
		w.stuckDone(info, c, resp)
		w.plegDone(c, info.req)
	}
	if v, ok := resp.(*runtimeapi.VersionResponse); ok && v.GetRuntimeName() != "" {
		w.runtime = v.GetRuntimeName()
	}
	switch {
	case info != nil && info.pod == nil && info.csi != nil:
		start := c.Start
		if start.IsZero() {
			start = c.Arrived
		}
		w.csiDone(info, cri.Call{Seq: int(c.Seq), Method: c.Name(), Request: info.shown, Response: shown, Err: err, Start: start, Duration: c.Duration})
	case info == nil || info.pod == nil:
		w.polling[c.Name()]++
		w.learn(resp)
	default:
		if !info.pod.followed {
			w.polling[OtherPods]++
		}
		info.pod.callDone(info, c, resp, shown, err)
	}
	w.mu.Unlock()
	w.deliver()
}

// learns are the node-level methods whose answers are read.
var learns = map[string]bool{"ListPodSandbox": true, "ListContainers": true, "Version": true}

// tick closes steps of several calls once they have been quiet.
func (w *Watcher) tick() {
	t := time.NewTicker(w.opts.Quiet / 3)
	defer t.Stop()
	var poked time.Time
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if h := w.opts.Hold; h != nil && time.Since(poked) >= time.Second && len(h.Held()) > 0 {
			// A second off the held calls' deadlines.
			poked = time.Now()
			for _, x := range h.Held() {
				x.Pod.poke()
			}
		}
		w.mu.Lock()
		w.checkStuck()
		w.checkPLEG()
		now := w.opts.Now()
		for _, p := range w.list {
			for _, o := range p.openSteps() {
				// A pull waits for the CreateContainer that names its
				// container; single-call steps close with their answer.
				if o.inflight == 0 && now.Sub(o.last) >= w.opts.Quiet && !single(o.kind) && (o.kind != steps.KindPull || o.container != "") {
					p.closeSlot(o.slot)
				}
			}
		}
		w.mu.Unlock()
		w.deliver()
	}
}

// deliver hands queued events to each pod's subscribers, outside w.mu (a
// subscriber may read the pod), one delivery at a time and in order.
func (w *Watcher) deliver() {
	w.deliverMu.Lock()
	defer w.deliverMu.Unlock()
	for {
		w.mu.Lock()
		q, np, removed, gone, notes, sq, pokes, pq := w.queue, w.newPods, w.gone, w.forgotten, w.specNotes, w.stuckQ, w.pokes, w.plegQ
		w.queue, w.newPods, w.gone, w.forgotten, w.specNotes, w.stuckQ, w.pokes, w.plegQ = nil, nil, nil, nil, nil, nil, nil, nil
		w.mu.Unlock()
		if len(q) == 0 && len(np) == 0 && len(removed) == 0 && len(gone) == 0 && len(notes) == 0 && len(sq) == 0 && len(pokes) == 0 && len(pq) == 0 {
			return
		}
		for _, n := range pq {
			w.opts.OnPLEG(n)
		}
		for _, p := range np {
			if w.opts.OnPod != nil {
				w.opts.OnPod(p)
			}
		}
		for _, n := range notes {
			if w.opts.OnSpec != nil {
				w.opts.OnSpec(n.pod, n.note)
			}
		}
		for _, e := range q {
			e.pod.subs.emit(e.ev)
			e.pod.poke()
		}
		for _, n := range sq {
			w.opts.OnStuck(n.pod, n.note)
			n.pod.poke()
		}
		for _, p := range pokes {
			p.poke()
		}
		// After their last events.
		for _, p := range removed {
			if w.opts.OnRemoved != nil {
				w.opts.OnRemoved(p)
			}
		}
		for _, p := range gone {
			if w.opts.OnForget != nil {
				w.opts.OnForget(p)
			}
		}
	}
}

// classify decides which pod and step a call belongs to (w.mu held).
func (w *Watcher) classify(c *proxy.Call, req proto.Message) *callInfo {
	info := &callInfo{req: req}
	if isCSI(c) {
		w.classifyCSI(c, req, info)
		return info
	}
	switch r := req.(type) {
	case *runtimeapi.RunPodSandboxRequest:
		info.pod = w.podOf(r.GetConfig().GetMetadata(), r.GetConfig().GetLabels())
		if info.pod != nil {
			info.pod.config = r.GetConfig()
			w.retrySpec(info.pod)
		}
		info.kind = steps.KindRunSandbox
	case *runtimeapi.PodSandboxStatusRequest:
		info.pod = w.bySandbox[r.GetPodSandboxId()]
		info.kind = steps.KindRelist
		if info.pod != nil && info.pod.lastKind() == steps.KindRunSandbox {
			info.kind = steps.KindSandboxStatus
		}
	case *runtimeapi.ListPodSandboxRequest:
		info.pod = w.podByFilter(r.GetFilter().GetLabelSelector(), r.GetFilter().GetId())
		info.kind = steps.KindRelist
	case *runtimeapi.ListContainersRequest:
		info.pod = w.podByFilter(r.GetFilter().GetLabelSelector(), r.GetFilter().GetPodSandboxId())
		info.kind = steps.KindRelist
	case *runtimeapi.ContainerStatusRequest:
		if k := w.byContainer[r.GetContainerId()]; k != nil {
			info.pod, info.container = k.pod, k.name
		}
		info.kind = steps.KindRelist
	case *runtimeapi.PullImageRequest:
		info.pod = w.podOf(r.GetSandboxConfig().GetMetadata(), r.GetSandboxConfig().GetLabels())
		if info.pod == nil {
			info.pod = w.creating()
		}
		info.kind = steps.KindPull
	case *runtimeapi.ImageStatusRequest:
		info.pod = w.imagePod(r.GetImage().GetAnnotations())
		info.kind = steps.KindPull
	case *runtimeapi.CreateContainerRequest:
		info.pod = w.bySandbox[r.GetPodSandboxId()]
		if info.pod == nil {
			info.pod = w.podOf(r.GetSandboxConfig().GetMetadata(), r.GetSandboxConfig().GetLabels())
		}
		info.container = r.GetConfig().GetMetadata().GetName()
		info.kind = steps.KindCreate
	case *runtimeapi.StartContainerRequest:
		w.byID(info, r.GetContainerId())
		info.kind = steps.KindStart
	case *runtimeapi.ExecSyncRequest:
		w.byID(info, r.GetContainerId())
		info.kind = steps.KindReady
		if info.pod != nil && info.pod.lastKind() == steps.KindStart && info.pod.lastContainer() == info.container {
			info.kind = steps.KindPostStart
		}
	case *runtimeapi.StopContainerRequest:
		w.byID(info, r.GetContainerId())
		info.kind = steps.KindStopContainers
	case *runtimeapi.RemoveContainerRequest:
		w.byID(info, r.GetContainerId())
		info.kind = steps.KindRemoveContainers
	case *runtimeapi.StopPodSandboxRequest:
		info.pod = w.bySandbox[r.GetPodSandboxId()]
		info.kind = steps.KindStopSandbox
	case *runtimeapi.RemovePodSandboxRequest:
		info.pod = w.bySandbox[r.GetPodSandboxId()]
		info.kind = steps.KindRemoveSandbox
	}
	if info.pod != nil && info.kind == steps.KindRelist {
		// Status reads while the pod is being torn down belong to the teardown.
		if o := info.pod.open["work"]; o != nil && o.step.Stage == steps.StageTeardown {
			info.kind = o.kind
			info.container = o.container
		}
	}
	if info.pod != nil {
		switch info.kind {
		case steps.KindRunSandbox, steps.KindPull, steps.KindCreate, steps.KindStart, steps.KindPostStart:
			w.active = info.pod
		}
	}
	return info
}

// byID attributes a call naming a container ID.
func (w *Watcher) byID(info *callInfo, id string) {
	if k := w.byContainer[id]; k != nil {
		info.pod, info.container = k.pod, k.name
	}
}

// imagePod is the pod an ImageStatus is for. The image manager's check
// sends the pod's annotations (EnsureImageExists,
// pkg/kubelet/images/image_manager.go), which RunPodSandbox sent too: the
// pod whose sandbox config has the same ones. The lookup of the image's
// user that follows sends none: the pod of the last check (w.mu held).
func (w *Watcher) imagePod(annotations map[string]string) *Pod {
	if len(annotations) > 0 {
		for _, p := range w.list {
			if p.config != nil && !p.stopping && maps.Equal(p.config.GetAnnotations(), annotations) {
				w.imageFor = p
				return p
			}
		}
	}
	if p := w.imageFor; p != nil && !p.stopping {
		if o := p.open["work"]; o != nil && o.kind == steps.KindPull {
			return p
		}
	}
	return w.creating()
}

// creating is the pod a call that names no pod is for: the one whose
// creation is under way, if any.
func (w *Watcher) creating() *Pod {
	if p := w.active; p != nil && p.sandboxID != "" && !p.stopping {
		return p
	}
	return nil
}

// podOf finds or makes the pod a sandbox config or labels name.
func (w *Watcher) podOf(md *runtimeapi.PodSandboxMetadata, labels map[string]string) *Pod {
	uid, ns, name := md.GetUid(), md.GetNamespace(), md.GetName()
	if uid == "" {
		uid, ns, name = labels[labelPodUID], labels[labelPodNamespace], labels[labelPodName]
	}
	if uid == "" {
		return nil
	}
	if p := w.pods[uid]; p != nil {
		if p.labels == nil {
			p.labels = labels // first seen in a CSI call's pod info
		}
		return p
	}
	p := newPod(w, uid, ns, name, labels)
	w.pods[uid] = p
	w.list = append(w.list, p)
	if p.followed {
		w.newPods = append(w.newPods, p)
	}
	w.flushCSI(p)
	return p
}

// podByFilter is the pod a filtered list asks about (by its UID label or a
// sandbox ID); nil for the node-level, unfiltered lists.
func (w *Watcher) podByFilter(labels map[string]string, sandboxID string) *Pod {
	if uid := labels[labelPodUID]; uid != "" {
		return w.pods[uid]
	}
	if sandboxID != "" {
		return w.bySandbox[sandboxID]
	}
	return nil
}

// learn reads the node-level lists' answers for pods and containers podstep
// did not see created (it started after them, or was restarted).
func (w *Watcher) learn(resp proto.Message) {
	switch r := resp.(type) {
	case *runtimeapi.ListPodSandboxResponse:
		for _, sb := range r.GetItems() {
			if w.bySandbox[sb.GetId()] != nil {
				continue
			}
			p := w.podOf(sb.GetMetadata(), sb.GetLabels())
			if p == nil {
				continue
			}
			p.joinedSandbox(sb)
		}
	case *runtimeapi.ListContainersResponse:
		for _, c := range r.GetContainers() {
			if w.byContainer[c.GetId()] != nil {
				continue
			}
			p := w.bySandbox[c.GetPodSandboxId()]
			if p == nil {
				continue
			}
			p.joinedContainer(c)
		}
	}
}

// runtimeName is the runtime's name for container IDs ("containerd://ID"),
// as its Version call answered (w.mu held).
func (w *Watcher) runtimeName() string {
	if w.runtime == "" {
		return "cri"
	}
	return w.runtime
}

// finished remembers that p was removed and forgets the oldest removed
// pods past MaxPods (w.mu held).
func (w *Watcher) finished(p *Pod) {
	w.removed = append(w.removed, p)
	if p.followed {
		w.gone = append(w.gone, p)
	}
	for len(w.removed) > w.opts.MaxPods {
		w.forget(w.removed[0])
		w.removed[0] = nil
		w.removed = w.removed[1:]
	}
}

// forget drops every reference the watcher holds to p (w.mu held).
func (w *Watcher) forget(p *Pod) {
	if w.pods[p.UID] == p {
		delete(w.pods, p.UID)
	}
	w.list = slices.DeleteFunc(w.list, func(x *Pod) bool { return x == p })
	for id, x := range w.bySandbox {
		if x == p {
			delete(w.bySandbox, id)
		}
	}
	for id, k := range w.byContainer {
		if k.pod == p {
			delete(w.byContainer, id)
		}
	}
	for _, info := range w.calls {
		if info.pod == p {
			info.pod = nil
		}
	}
	if w.active == p {
		w.active = nil
	}
	if w.imageFor == p {
		w.imageFor = nil
	}
	w.forgetCSI(p)
	if p.followed {
		w.forgotten = append(w.forgotten, p)
	}
}
