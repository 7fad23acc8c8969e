package watch

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/explain"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// ctr is one container of a pod as the calls showed it.
type ctr struct {
	pod      *Pod
	name, id string
	attempt  int
	image    string // as in the manifest (user_specified_image)
	imageID  string
	logPath  string // relative to the sandbox's log directory
	state    runtimeapi.ContainerState
	exitCode int32
	reason   string
	message  string
	started  time.Time
	finished time.Time
	init     bool   // inferred: see the package comment
	hookErr  string // a failed postStart exec hook's message
	// statusLog is the log file ContainerStatus named (absolute, the
	// runtime's log_path), for a container whose CreateContainer podstep
	// did not see.
	statusLog string
	// stopSent: the kubelet sent StopContainer for it, or StopPodSandbox
	// for its sandbox, so its non-zero exit (137, 143) is the kill's, not
	// a failure of its own.
	stopSent bool
	// exitSeen: ContainerStatus showed its non-zero exit; exitPending
	// until the step that saw it explains it.
	exitSeen, exitPending bool
}

// Pod is one pod's story as the kubelet's calls tell it.
type Pod struct {
	w                    *Watcher
	UID, Namespace, Name string
	followed             bool
	labels               map[string]string
	config               *runtimeapi.PodSandboxConfig
	firstSeen            time.Time

	sandboxID    string
	sandboxReady bool
	ips          []string
	stopping     bool
	removed      bool
	containers   map[string]*ctr // the newest attempt, by name
	order        []string        // container names, in creation order
	lastCreated  *ctr
	lastKind_    steps.Kind // the last step that was not a relist
	lastCont     string
	joined       bool // podstep saw the pod first in a node-level list

	steps           []steps.Step // finished, in the order they finished
	open            map[string]*openStep
	draining        []*openStep       // out of their slot, waiting for an answer
	lastRelistAfter time.Time         // the start of the work step the last kept relist followed
	desired         *podSpec          // the pod's spec (Options.Specs); nil: not asked
	vsSent          map[string]string // by container: specVsSent of its last CreateContainer
	prev            podstate.Snapshot
	events          []podstate.Event
	subs            subscribers
	changed         chan struct{} // Changed: one signal pending at most
	done            chan struct{} // closed when RemovePodSandbox succeeded
	st              podStuck      // the stuck-at view's (stuck.go)
}

func newPod(w *Watcher, uid, ns, name string, labels map[string]string) *Pod {
	p := &Pod{w: w, UID: uid, Namespace: ns, Name: name, labels: labels, firstSeen: w.opts.Now(),
		containers: map[string]*ctr{}, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	p.followed = w.opts.Follow == "" || w.opts.Follow == p.Key() || w.opts.Follow == name
	if p.followed && w.opts.Specs != nil {
		w.fetchSpec(p)
	}
	p.prev = p.snapshot()
	return p
}

// Key is "namespace/name".
func (p *Pod) Key() string { return p.Namespace + "/" + p.Name }

// Removed is closed once the kubelet removed the pod's sandbox.
func (p *Pod) Removed() <-chan struct{} { return p.done }

func (p *Pod) lastKind() steps.Kind  { return p.lastKind_ }
func (p *Pod) lastContainer() string { return p.lastCont }

// openStep is a step still taking calls. A pod has up to one per slot
// (slotOf): the pod worker's calls (sandbox, image, create, start, hooks,
// teardown) and the status reads (the PLEG's relist, GetPodStatus) come
// from different goroutines of the kubelet, at the same time.
type openStep struct {
	step      steps.Step
	slot      string
	kind      steps.Kind
	container string
	inflight  int
	last      time.Time
	keep      bool // a relist shown even if it changed nothing
	draining  bool // out of its slot, finishes with its last answer
	closed    bool
	dropped   bool
	kept      int      // protobuf bytes of the bodies kept (StepBudget)
	notes     []string // warnings of the stuck-at view (stuck.go), added to its result
}

// keepBody is a body as o keeps it: cut to MaxBody, and to almost nothing
// once o kept StepBudget (w.mu held).
func (o *openStep) keepBody(m proto.Message) proto.Message {
	m, n := cutBody(m, MaxBody)
	if o.kept+n > StepBudget {
		m, n = cutBody(m, 0)
	}
	o.kept += n
	return m
}

// slotOf is the slot of a step kind: "relist", "probe/<c>" or "work".
func slotOf(kind steps.Kind, container string) string {
	switch kind {
	case steps.KindRelist:
		return "relist"
	case steps.KindReady:
		return "probe/" + container
	case steps.KindVolumes, steps.KindRemoveDirs:
		return "csi" // a kubelet's CSI calls, from its volume manager
	}
	return "work"
}

// joins says whether a call of kind for container goes to the open step.
func (o *openStep) joins(kind steps.Kind, container string) bool {
	switch kind {
	case steps.KindRelist, steps.KindPull, steps.KindStopContainers, steps.KindRemoveContainers:
		return o.kind == kind
	case steps.KindReady:
		return o.kind == kind && o.container == container
	}
	return false
}

// single says whether a step of kind is one call.
func single(kind steps.Kind) bool {
	switch kind {
	case steps.KindRunSandbox, steps.KindSandboxStatus, steps.KindCreate, steps.KindStart, steps.KindPostStart,
		steps.KindStopSandbox, steps.KindRemoveSandbox, steps.KindVolumes, steps.KindRemoveDirs:
		return true
	}
	return false
}

// callArrived puts a call in its step (w.mu held).
func (p *Pod) callArrived(info *callInfo, c *proxy.Call, shown proto.Message) *openStep {
	now := p.w.opts.Now()
	switch info.kind {
	case steps.KindStopContainers, steps.KindStopSandbox:
		p.stopping = true
		switch r := info.req.(type) {
		case *runtimeapi.StopContainerRequest:
			if k := p.w.byContainer[r.GetContainerId()]; k != nil {
				k.stopSent = true
			}
		case *runtimeapi.StopPodSandboxRequest:
			// It kills every container of the sandbox (the containers of
			// a sandbox made after it are new ones).
			for _, k := range p.containers {
				k.stopSent = true
			}
		}
	case steps.KindCreate:
		p.inferInit(info.container)
		if o := p.open["work"]; o != nil && o.kind == steps.KindPull && o.container == "" {
			// The image was for this container: pull/<name>.
			o.container, o.step.Container, o.step.Name = info.container, info.container, steps.KindPull.String()+"/"+info.container
			if p.isInit(info.container) {
				o.step.Stage = steps.StageInit
			}
		}
	}
	slot := slotOf(info.kind, info.container)
	if r := p.open["relist"]; slot != "relist" && r != nil && r.inflight == 0 {
		// The kubelet acts on what its reads found: they are a step of
		// their own, before this one (and what they changed is theirs).
		p.closeSlot("relist")
	}
	o := p.open[slot]
	if o == nil || !o.joins(info.kind, info.container) {
		if o != nil && o.inflight > 0 {
			// Its answer is still to come (two of the kubelet's goroutines
			// at once): it finishes when that comes.
			delete(p.open, slot)
			o.draining = true
			p.draining = append(p.draining, o)
		} else {
			p.closeSlot(slot)
		}
		o = p.openStep(info.kind, info.container, now)
	}
	o.inflight++
	o.last = now
	if info.kind != steps.KindRelist && info.csi == nil {
		p.lastKind_, p.lastCont = info.kind, info.container
	}
	info.shown = o.keepBody(shown)
	return o
}

// inferInit marks the previous container an init container when it exited
// 0 before the next one was created (see the package comment).
func (p *Pod) inferInit(next string) {
	prev := p.lastCreated
	if p.specPod() != nil || prev == nil || prev.name == next || prev.init || prev.state != runtimeapi.ContainerState_CONTAINER_EXITED || prev.exitCode != 0 {
		return
	}
	prev.init = true
	last := steps.Stage("")
	retag := func(s *steps.Step) {
		if s.Stage == steps.StageContainers && (s.Container == prev.name || s.Kind == steps.KindRelist && last == steps.StageInit) {
			s.Stage = steps.StageInit
		}
		last = s.Stage
	}
	for i := range p.steps {
		retag(&p.steps[i])
	}
	for _, o := range p.openSteps() {
		retag(&o.step)
	}
	// The status is now read with it as an init container: the next step's
	// changes start from there.
	p.prev = p.snapshot()
}

// openSteps are the open steps in the order they opened.
func (p *Pod) openSteps() []*openStep {
	var out []*openStep
	for _, o := range p.open {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].step.Started.Before(out[j].step.Started) })
	return out
}

// lastWork is the newest step of the pod worker's, closed or open.
func (p *Pod) lastWork() *steps.Step {
	if o := p.open["work"]; o != nil {
		return &o.step
	}
	for i := len(p.steps) - 1; i >= 0; i-- {
		if slotOf(p.steps[i].Kind, p.steps[i].Container) == "work" {
			return &p.steps[i]
		}
	}
	return nil
}

// openStep starts a step of kind (w.mu held). Its ID is given when it
// closes: steps are numbered in the order they finish, as they are shown.
func (p *Pod) openStep(kind steps.Kind, container string, now time.Time) *openStep {
	d := describe(kind, container)
	st := d.stage
	lw := p.lastWork()
	if kind == steps.KindRelist && lw != nil {
		st = lw.Stage // a relist belongs to the stage it watches
		if st == steps.StagePostStart || st == steps.StageReady || st == steps.StageTeardown {
			st = steps.StageContainers
		}
	}
	if container != "" && p.isInit(container) && st == steps.StageContainers {
		st = steps.StageInit
	}
	if (kind == steps.KindStopContainers || kind == steps.KindRemoveContainers) && !p.stopping && p.sandboxReady {
		// The container GC pruning an old instance of a running pod.
		st = steps.StageContainers
	}
	o := &openStep{slot: slotOf(kind, container), kind: kind, container: container, last: now,
		step: steps.Step{Stage: st, Kind: kind, Name: d.name, Title: d.title, Container: container,
			Mirrors: d.mirrors, Explain: d.explain, State: steps.Running, Started: now}}
	if kind == steps.KindRelist && lw != nil && (lw.Kind == steps.KindStart || lw.Kind == steps.KindPostStart) && p.lastRelistAfter != lw.Started {
		// SyncPod's relist after a start, as `podstep run` shows it.
		o.keep = true
		p.lastRelistAfter = lw.Started
	}
	if p.open == nil {
		p.open = map[string]*openStep{}
	}
	p.open[o.slot] = o
	return o
}

// callDone records an answer (w.mu held).
// resp is the answer as sent, shown and err its redacted copies.
func (p *Pod) callDone(info *callInfo, c *proxy.Call, resp, shown proto.Message, err error) {
	o := info.step
	start := c.Start
	if start.IsZero() {
		start = c.Arrived
	}
	if o != nil && !o.closed {
		shown = o.keepBody(shown)
	}
	call := cri.Call{Seq: int(c.Seq), Method: c.Name(), Request: info.shown, Response: shown, Err: err, Start: start, Duration: c.Duration}
	p.apply(info, c, resp, c.Err)
	if o == nil || o.closed {
		return
	}
	o.step.Calls = append(o.step.Calls, call)
	o.notes = append(o.notes, stuckNotes(info, c)...)
	o.inflight--
	o.last = p.w.opts.Now()
	switch {
	case o.draining && o.inflight == 0:
		p.closeStep(o)
	case single(o.kind) && o.inflight == 0:
		p.closeSlot(o.slot)
	}
}

// closeSlot finishes the slot's open step: its result, the pod after it,
// what it changed; then its events go out, all together (w.mu held).
func (p *Pod) closeSlot(slot string) {
	o := p.open[slot]
	if o == nil {
		return
	}
	delete(p.open, slot)
	p.closeStep(o)
}

// closeStep finishes o (w.mu held).
func (p *Pod) closeStep(o *openStep) {
	if o.closed {
		return
	}
	o.closed = true
	if o.draining {
		p.draining = slices.DeleteFunc(p.draining, func(x *openStep) bool { return x == o })
	}
	s := &o.step
	end := s.Started
	for _, c := range s.Calls {
		if e := c.Start.Add(c.Duration); e.After(end) {
			end = e
		}
	}
	s.Duration = end.Sub(s.Started)
	s.Result = p.result(s)
	s.Result.Warnings = append(s.Result.Warnings, o.notes...)
	s.State = steps.Done
	var exited *ctr
	if s.Result.Err == nil {
		if exited = p.exitIn(s); exited != nil {
			s.Result.Reason = exited.reason
			if s.Result.Reason == "" {
				s.Result.Reason = reason.Error
			}
			s.Result.Message = fmt.Sprintf("container %q exited with code %d (%s)", exited.name, exited.exitCode, s.Result.Reason)
			s.Result.Err = errors.New(s.Result.Message)
		}
	}
	if s.Result.Err != nil {
		s.State = steps.Failed
		s.Result.Explanation = p.explain(s, exited)
	}
	snap := p.snapshot()
	s.Changes = podstate.Diff(p.prev, snap)
	s.Events = podstate.NewEvents(p.prev, snap)
	s.Pod = &snap
	if o.kind == steps.KindRelist && !o.keep && s.State != steps.Failed && len(s.Changes) == 0 && len(s.Events) == 0 {
		// A relist that found nothing new: counted with the polling.
		for _, c := range s.Calls {
			p.w.polling[c.Method]++
		}
		o.dropped = true
		return
	}
	p.prev = snap
	s.ID = len(p.steps) + 1
	p.steps = append(p.steps, *s)
	started := copyStep(*s)
	started.State, started.Result, started.Pod, started.Changes, started.Events, started.Calls, started.Duration = steps.Running, steps.Result{}, nil, nil, nil, nil, 0
	p.queue(steps.Event{Kind: steps.StepStarted, Step: started})
	for i := range s.Calls {
		c := s.Calls[i]
		p.queue(steps.Event{Kind: steps.CallSent, Method: c.Method})
		p.queue(steps.Event{Kind: steps.CallDone, Method: c.Method, Call: &c})
	}
	p.queue(steps.Event{Kind: steps.StepDone, Step: copyStep(*s), Pod: &snap})
}

// closeAll finishes every open step (w.mu held).
func (p *Pod) closeAll() {
	for _, o := range slices.Clone(p.draining) {
		p.closeStep(o)
	}
	for _, o := range p.openSteps() {
		p.closeSlot(o.slot)
	}
}

// queue adds an event for the pod's subscribers (w.mu held).
func (p *Pod) queue(ev steps.Event) {
	p.w.queue = append(p.w.queue, queued{p, ev})
}

func copyStep(s steps.Step) steps.Step {
	s.Calls = append([]cri.Call(nil), s.Calls...)
	s.Changes = append([]podstate.Change(nil), s.Changes...)
	s.Events = append([]podstate.Event(nil), s.Events...)
	return s
}

// record adds a kubelet event, as the kubelet's recorder would have.
func (p *Pod) record(typ, why, object, msg string) {
	p.events = append(p.events, podstate.Event{Time: p.w.opts.Now(), Type: typ, Reason: why, Object: object, Message: p.w.red.Text(msg)})
}

// object names a container as events do: spec.containers{app}.
func (p *Pod) object(c *ctr) string {
	if c != nil && c.init {
		return "spec.initContainers{" + c.name + "}"
	}
	name := ""
	if c != nil {
		name = c.name
	}
	return "spec.containers{" + name + "}"
}

// spec is the pod as far as the calls show it: its metadata and the
// containers created so far.
func (p *Pod) spec() *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: types.UID(p.UID), Labels: map[string]string{}},
	}
	for k, v := range p.labels {
		switch k {
		case labelPodName, labelPodNamespace, labelPodUID:
		default:
			pod.Labels[k] = v
		}
	}
	if p.config != nil {
		pod.Annotations = p.config.GetAnnotations()
		pod.Spec.Hostname = p.config.GetHostname()
	}
	if sp := p.specPod(); sp != nil {
		// The desired spec: every container, those not created yet too.
		// Without probes: the kubelet runs HTTP and TCP probes itself, out
		// of the proxy's sight, so readiness is read as before (running).
		pod.Spec = *sp.Spec.DeepCopy()
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range cs {
				cs[i].StartupProbe, cs[i].ReadinessProbe, cs[i].LivenessProbe = nil, nil, nil
			}
		}
		return pod
	}
	for _, n := range p.order {
		c := p.containers[n]
		spec := corev1.Container{Name: n, Image: c.image}
		if c.init {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, spec)
		} else {
			pod.Spec.Containers = append(pod.Spec.Containers, spec)
		}
	}
	return pod
}

// snapshot rebuilds the pod's status from what the calls showed (w.mu held).
func (p *Pod) snapshot() podstate.Snapshot {
	t := podstate.New(p.spec(), p.w.opts.Now)
	t.SetRedact(p.w.red.Text)
	if p.sandboxReady {
		t.SandboxReady(p.ips)
	}
	for _, n := range p.order {
		c := p.containers[n]
		t.Created(n, p.w.runtimeName()+"://"+c.id, c.imageID)
		switch {
		case c.hookErr != "":
			t.HookFailed(n, c.hookErr)
		case c.state == runtimeapi.ContainerState_CONTAINER_RUNNING:
			t.Running(n, c.started)
		case c.state == runtimeapi.ContainerState_CONTAINER_EXITED:
			t.Terminated(n, c.exitCode, c.reason, c.message, c.started, c.finished)
		}
		t.RestartCount(n, c.attempt)
	}
	snap := t.Snapshot()
	start := metav1.NewTime(p.firstSeen)
	snap.Status.StartTime = &start
	snap.Events = append([]podstate.Event(nil), p.events...)
	return snap
}

// apply updates the pod from a call's answer (w.mu held).
func (p *Pod) apply(info *callInfo, c *proxy.Call, resp proto.Message, err error) {
	w := p.w
	if info.csi != nil {
		p.csiApply(info, err)
		return
	}
	switch r := info.req.(type) {
	case *runtimeapi.RunPodSandboxRequest:
		if err != nil {
			p.record(corev1.EventTypeWarning, reason.FailedCreatePodSandBox, "", "Failed to create pod sandbox: "+cri.Message(err))
			return
		}
		if rr, ok := resp.(*runtimeapi.RunPodSandboxResponse); ok {
			p.sandboxID, p.sandboxReady = rr.GetPodSandboxId(), true
			w.bySandbox[p.sandboxID] = p
		}
	case *runtimeapi.PodSandboxStatusRequest:
		if rr, ok := resp.(*runtimeapi.PodSandboxStatusResponse); ok {
			p.sandboxStatus(rr.GetStatus())
		}
	case *runtimeapi.ListPodSandboxRequest:
		if rr, ok := resp.(*runtimeapi.ListPodSandboxResponse); ok {
			for _, sb := range rr.GetItems() {
				if sb.GetId() == p.sandboxID {
					p.sandboxReady = sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
				}
			}
		}
	case *runtimeapi.ListContainersRequest:
		if rr, ok := resp.(*runtimeapi.ListContainersResponse); ok {
			for _, lc := range rr.GetContainers() {
				if k := w.byContainer[lc.GetId()]; k != nil && k.pod == p && lc.GetState() != k.state {
					k.state = lc.GetState()
				}
			}
		}
	case *runtimeapi.ContainerStatusRequest:
		if rr, ok := resp.(*runtimeapi.ContainerStatusResponse); ok {
			if k := w.byContainer[r.GetContainerId()]; k != nil {
				k.status(rr.GetStatus())
			}
		}
	case *runtimeapi.PullImageRequest:
		if err != nil {
			p.record(corev1.EventTypeWarning, reason.FailedToPullImage, "", "Failed to pull image \""+r.GetImage().GetImage()+"\": "+cri.Message(err))
		}
	case *runtimeapi.CreateContainerRequest:
		cfg := r.GetConfig()
		p.compareSpec(cfg)
		k := &ctr{pod: p, name: cfg.GetMetadata().GetName(), attempt: int(cfg.GetMetadata().GetAttempt()),
			image: cfg.GetImage().GetUserSpecifiedImage(), imageID: cfg.GetImage().GetImage(), logPath: cfg.GetLogPath()}
		if k.image == "" {
			k.image = k.imageID
		}
		k.init = p.isInit(k.name)
		if err != nil {
			p.record(corev1.EventTypeWarning, reason.FailedToCreateContainer, p.object(k), "Error: "+cri.Message(err))
			return
		}
		if rr, ok := resp.(*runtimeapi.CreateContainerResponse); ok {
			k.id = rr.GetContainerId()
		}
		k.state = runtimeapi.ContainerState_CONTAINER_CREATED
		if p.containers[k.name] == nil {
			p.order = append(p.order, k.name)
		}
		p.containers[k.name] = k
		p.lastCreated = k
		w.byContainer[k.id] = k
		p.record(corev1.EventTypeNormal, reason.CreatedContainer, p.object(k), "Created container: "+k.name)
	case *runtimeapi.StartContainerRequest:
		k := w.byContainer[r.GetContainerId()]
		if k == nil {
			return
		}
		if err != nil {
			p.record(corev1.EventTypeWarning, reason.FailedToStartContainer, p.object(k), "Error: "+cri.Message(err))
			return
		}
		k.state, k.started = runtimeapi.ContainerState_CONTAINER_RUNNING, c.Start.Add(c.Duration)
		p.record(corev1.EventTypeNormal, reason.StartedContainer, p.object(k), "Started container "+k.name)
	case *runtimeapi.ExecSyncRequest:
		k := w.byContainer[r.GetContainerId()]
		rr, _ := resp.(*runtimeapi.ExecSyncResponse)
		if k == nil || info.kind != steps.KindPostStart {
			return
		}
		if err != nil || rr.GetExitCode() != 0 {
			msg := hookMessage(r, rr, err, k.name, p.podRef())
			k.hookErr = w.red.Text(msg)
			p.record(corev1.EventTypeWarning, reason.FailedPostStartHook, p.object(k), "PostStartHook failed")
		}
	case *runtimeapi.StopContainerRequest:
		if k := w.byContainer[r.GetContainerId()]; k != nil && err == nil {
			p.record(corev1.EventTypeNormal, reason.KillingContainer, p.object(k), "Stopping container "+k.name)
			if k.state != runtimeapi.ContainerState_CONTAINER_EXITED {
				k.state, k.finished = runtimeapi.ContainerState_CONTAINER_EXITED, c.Start.Add(c.Duration)
			}
		}
	case *runtimeapi.RemoveContainerRequest:
		if err == nil {
			delete(w.byContainer, r.GetContainerId())
		}
	case *runtimeapi.StopPodSandboxRequest:
		if err == nil {
			p.sandboxReady = false
		}
	case *runtimeapi.RemovePodSandboxRequest:
		if err == nil && !p.removed {
			p.removed, p.sandboxReady = true, false
			delete(w.bySandbox, r.GetPodSandboxId())
			close(p.done)
			w.finished(p)
		}
	}
}

// sandboxStatus reads a PodSandboxStatus answer.
func (p *Pod) sandboxStatus(st *runtimeapi.PodSandboxStatus) {
	if st == nil {
		return
	}
	p.sandboxReady = st.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
	var ips []string
	if ip := st.GetNetwork().GetIp(); ip != "" {
		ips = append(ips, ip)
	}
	for _, a := range st.GetNetwork().GetAdditionalIps() {
		ips = append(ips, a.GetIp())
	}
	if len(ips) > 0 {
		p.ips = ips
	}
}

// status reads a ContainerStatus answer.
func (k *ctr) status(st *runtimeapi.ContainerStatus) {
	if st == nil {
		return
	}
	k.state = st.GetState()
	k.exitCode, k.reason, k.message = st.GetExitCode(), st.GetReason(), st.GetMessage()
	if k.state == runtimeapi.ContainerState_CONTAINER_EXITED && k.exitCode != 0 && !k.exitSeen {
		// An exit after the kubelet's StopContainer or StopPodSandbox is
		// the kill's (137, 143), not a failure; decided now, as the step
		// closes only when the next call comes.
		k.exitSeen = true
		k.exitPending = !k.stopSent
	}
	if st.GetLogPath() != "" {
		k.statusLog = st.GetLogPath()
	}
	if st.GetStartedAt() > 0 {
		k.started = time.Unix(0, st.GetStartedAt())
	}
	if st.GetFinishedAt() > 0 {
		k.finished = time.Unix(0, st.GetFinishedAt())
	}
	if st.GetImageRef() != "" {
		k.imageID = st.GetImageRef()
	}
}

// joinedSandbox adopts a sandbox podstep did not see created (w.mu held).
func (p *Pod) joinedSandbox(sb *runtimeapi.PodSandbox) {
	p.sandboxID = sb.GetId()
	p.sandboxReady = sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
	p.w.bySandbox[p.sandboxID] = p
	p.joined = true
	p.missedStep("sandbox " + short(p.sandboxID) + " (created " + time.Unix(0, sb.GetCreatedAt()).UTC().Format(time.RFC3339) + ")")
}

// joinedContainer adopts a container podstep did not see created (w.mu held).
func (p *Pod) joinedContainer(lc *runtimeapi.Container) {
	name := lc.GetMetadata().GetName()
	if name == "" {
		name = lc.GetLabels()[labelContainerName]
	}
	k := &ctr{pod: p, name: name, id: lc.GetId(), attempt: int(lc.GetMetadata().GetAttempt()), image: lc.GetImage().GetUserSpecifiedImage(),
		imageID: lc.GetImageRef(), state: lc.GetState()}
	if k.image == "" {
		k.image = lc.GetImage().GetImage()
	}
	if old := p.containers[name]; old != nil {
		if old.attempt > k.attempt {
			p.w.byContainer[k.id] = k
			return
		}
		k.init = p.isInit(name)
	} else {
		k.init = p.isInit(name)
		p.order = append(p.order, name)
	}
	p.containers[name] = k
	p.lastCreated = k
	p.w.byContainer[k.id] = k
	p.missedStep("container " + name + " " + short(k.id) + " attempt " + strconv.Itoa(k.attempt) + ", " + stateWord(k.state))
}

// missedStep says, as a step of its own, what podstep found already made
// when it joined: the calls that made it were not seen (w.mu held).
func (p *Pod) missedStep(what string) {
	p.closeSlot("relist")
	o := p.openStep(steps.KindRelist, "", p.w.opts.Now())
	o.keep = true
	o.step.Title = "podstep joined late"
	o.step.Result.Warnings = append(o.step.Result.Warnings, "missed: "+what+" existed before podstep saw this pod; the calls that made it were not seen")
	p.closeSlot("relist")
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

// podRef names the pod as the kubelet's format.Pod does: "name_namespace(uid)".
func (p *Pod) podRef() string { return p.Name + "_" + p.Namespace + "(" + p.UID + ")" }

// explain matches a failed step of the kubelet's with the table of known
// failures (internal/explain), its commands filled in with the pod's names.
// exited, when set, is the container whose non-zero exit failed the step:
// the last lines of its log are matched too (a program's own words, such
// as "No space left on device", as `podstep run` reads them).
func (p *Pod) explain(s *steps.Step, exited *ctr) *explain.Explanation {
	f := explain.Failure{Reason: s.Result.Reason, Message: s.Result.Message}
	name := s.Container
	if exited != nil {
		name = exited.name
		if lines, err := p.exitLog(exited); err == nil {
			f.Log = lines
		} else {
			s.Result.Warnings = append(s.Result.Warnings, "the container's log was not read: "+safe.Line(err.Error()))
		}
	}
	e := explain.Find(f)
	if e == nil {
		return nil
	}
	v := explain.Values{Pod: p.Name, Namespace: p.Namespace, Container: name}
	if c := p.containers[name]; c != nil {
		v.Image, v.ContainerID = c.image, c.id
	}
	return e.Explain(v)
}

// exitIn is the container whose non-zero exit a ContainerStatus of step s
// showed first, not yet explained (w.mu held); nil when there is none
// (ctr.status leaves out the exits of a kill).
func (p *Pod) exitIn(s *steps.Step) *ctr {
	var found *ctr
	for _, c := range s.Calls {
		q, ok := c.Request.(*runtimeapi.ContainerStatusRequest)
		if !ok {
			continue
		}
		k := p.w.byContainer[q.GetContainerId()]
		if k == nil || k.pod != p || !k.exitPending {
			continue
		}
		k.exitPending = false
		if found == nil {
			found = k
		}
	}
	return found
}
