package watch

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// The stuck-at view: for each pod, the calls the kubelet sent that the
// runtime has not answered, their age and the kubelet's deadline for them,
// and why a pod with no call of its own in flight waits.

// The kubelet's timings this view names (kubelet v1.37.0).
const (
	// DefaultRequestTimeout is the kubelet's runtimeRequestTimeout
	// default (2m, KubeletConfiguration; remoteRuntimeService's timeout).
	DefaultRequestTimeout = 2 * time.Minute
	// VolumeWait is podAttachAndMountTimeout: how long WaitForAttachAndMount
	// (pkg/kubelet/volumemanager/volume_manager.go) waits for a pod's
	// volumes before the sync fails and is retried; the pod worker sends no
	// CRI call for the pod meanwhile.
	VolumeWait = 2*time.Minute + 3*time.Second
	// ImageBackOff and MaxImageBackOff are imageBackOffPeriod and
	// MaxImageBackOff (pkg/kubelet/kubelet.go): after the n-th failed pull
	// of an image for a pod the image manager (EnsureImageExists,
	// pkg/kubelet/images/image_manager.go) refuses to pull it again for
	// min(10s·2^(n-1), 300s) (flowcontrol.Backoff, keyed by pod UID and
	// image), answering ImagePullBackOff without a PullImage.
	ImageBackOff    = 10 * time.Second
	MaxImageBackOff = 300 * time.Second
	// SyncBackOff is backOffPeriod (pkg/kubelet/kubelet.go): after a sync
	// that failed (a sandbox that could not be made, a pull that failed)
	// podWorkers.completeWork (pkg/kubelet/pod_workers.go) requeues the pod
	// after it, jittered up to half again (workerBackOffPeriodJitterFactor).
	SyncBackOff = 10 * time.Second
)

// stuckSteps are the ages at which a call still in flight is said again
// (text and JSON), after which it is said every stuckEvery.
var stuckSteps = []time.Duration{500 * time.Millisecond, 5 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute}

const stuckEvery = 5 * time.Minute

// stuckAfter is the age from which a call in flight is shown as such.
func stuckAfter() time.Duration { return stuckSteps[0] }

// nextStuck is the age at which a call said n times is said again.
func nextStuck(n int) time.Duration {
	if n < len(stuckSteps) {
		return stuckSteps[n]
	}
	return stuckSteps[len(stuckSteps)-1] + time.Duration(n-len(stuckSteps)+1)*stuckEvery
}

// Deadline sources (InFlight.DeadlineFrom).
const (
	// DeadlineCall: the call carried it (the gRPC deadline the kubelet's
	// context set).
	DeadlineCall = "call"
	// DeadlineKubelet: the call carried none podstep could read; it is the
	// kubelet's rule for the method with --request-timeout.
	DeadlineKubelet = "kubelet"
	// DeadlineNone: the kubelet sets none (PullImage; ExecSync without a
	// timeout).
	DeadlineNone = "none"
)

// kubeletDeadline is the kubelet's own deadline for a call of method, with
// t its runtimeRequestTimeout, and the rule in words; 0 when it sets none.
// The rules are remoteRuntimeService's and remoteImageService's methods in
// staging/src/k8s.io/cri-client/pkg (remote_runtime.go, remote_image.go),
// kubelet v1.37.0.
func kubeletDeadline(method string, req proto.Message, t time.Duration) (time.Duration, string) {
	switch method {
	case "RunPodSandbox":
		return cri.SandboxTimeout(t), "2 × runtimeRequestTimeout (remoteRuntimeService.RunPodSandbox)"
	case "StopContainer":
		g := time.Duration(0)
		if r, ok := req.(*runtimeapi.StopContainerRequest); ok {
			g = time.Duration(r.GetTimeout()) * time.Second
		}
		return t + g, "the grace period " + age(g) + " + runtimeRequestTimeout (remoteRuntimeService.StopContainer)"
	case "ExecSync":
		r, _ := req.(*runtimeapi.ExecSyncRequest)
		if r.GetTimeout() == 0 {
			return 0, "none: ExecSync without a timeout (remoteRuntimeService.ExecSync)"
		}
		g := time.Duration(r.GetTimeout()) * time.Second
		return t + g, "the command's timeout " + age(g) + " + runtimeRequestTimeout (remoteRuntimeService.ExecSync)"
	case "PullImage":
		return 0, "none: the kubelet waits for a pull as long as it takes (remoteImageService.PullImage)"
	case "GetContainerEvents", "StreamPodSandboxes", "StreamContainers", "StreamPodSandboxMetrics", "StreamContainerStats":
		return 0, "none: a stream"
	}
	return t, "runtimeRequestTimeout (remoteRuntimeService." + method + ")"
}

// Earlier is the earlier call a retry collides with: the same sandbox or
// container name, sent while the first call was still open or after the
// kubelet gave up on it (the runtime may still be making it, and keeps its
// name reserved: containerd's `failed to reserve sandbox name ... is
// reserved for ...`).
type Earlier struct {
	Seq    uint64    `json:"seq"`
	Method string    `json:"method"`
	Sent   time.Time `json:"sent"`
	// State is "open" (no answer yet) or "gave-up" (the kubelet's
	// deadline passed: it stopped waiting; the runtime was never told).
	State string `json:"state"`
	// GaveUpAfterMs is how long the kubelet waited for it (State
	// "gave-up").
	GaveUpAfterMs int64  `json:"gave_up_after_ms,omitempty"`
	Error         string `json:"error,omitempty"`
}

// InFlight is one call of a pod the kubelet sent and the runtime has not
// answered, or one the kubelet gave up on.
type InFlight struct {
	Seq       uint64 `json:"seq"`
	Method    string `json:"method"`
	Step      string `json:"step,omitempty"`
	Container string `json:"container,omitempty"`
	// Sent is when the call reached the proxy; AgeMs how long ago.
	Sent  time.Time `json:"sent"`
	AgeMs int64     `json:"age_ms"`
	// Deadline is when the kubelet gives up on it (absent: never),
	// DeadlineMs the same from Sent, DeadlineFrom where podstep read it
	// (DeadlineCall, DeadlineKubelet, DeadlineNone) and Rule the kubelet's
	// rule for the method.
	Deadline     *time.Time `json:"deadline,omitempty"`
	DeadlineMs   int64      `json:"deadline_ms,omitempty"`
	DeadlineFrom string     `json:"deadline_from"`
	Rule         string     `json:"rule"`
	// State is "open" (no answer yet), "past-deadline" (open past the
	// kubelet's deadline), "gave-up" (the kubelet's deadline passed: it
	// gave up and will retry) or "answered".
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Name is the sandbox or container name the runtime reserves for the
	// call (RunPodSandbox: NAME_NAMESPACE_UID_ATTEMPT; CreateContainer:
	// the container's name and attempt); Attempt the metadata's attempt.
	Name    string `json:"name,omitempty"`
	Attempt *int   `json:"attempt,omitempty"`
	// Try counts the pod's RunPodSandbox calls (a re-creation loop: 2, 3,
	// ...) and Previous is why the one before did not give a sandbox.
	Try      int    `json:"try,omitempty"`
	Previous string `json:"previous,omitempty"`
	// CollidesWith is the earlier call with the same name, still open or
	// given up on: the cause of a "name is reserved" error.
	CollidesWith *Earlier `json:"collides_with,omitempty"`
}

// Waiting is why a pod with no call of its own in flight waits.
type Waiting struct {
	// Why is "image-pull-queue" (behind another pod's PullImage: the
	// kubelet pulls one image at a time), "pull-backoff" (the image
	// manager's back-off after a failed pull), "sandbox-retry" (the pod
	// worker's back-off after a failed sandbox) or "volumes" (no CRI call
	// yet: the volume manager's wait).
	Why string `json:"why"`
	// Text says it in words; Since is when it began, Until when it ends
	// (absent: unknown).
	Text  string     `json:"text"`
	Since time.Time  `json:"since"`
	Until *time.Time `json:"until,omitempty"`
	// Behind is the other pod's call this one waits behind.
	Behind *Behind `json:"behind,omitempty"`
	Image  string  `json:"image,omitempty"`
	// Failures is how many pulls of Image failed in a row (pull-backoff),
	// BackOffMs the back-off after the last.
	Failures  int   `json:"failures,omitempty"`
	BackOffMs int64 `json:"backoff_ms,omitempty"`
}

// Behind is the call of another pod a pod waits behind.
type Behind struct {
	Pod    string    `json:"pod"`
	Seq    uint64    `json:"seq"`
	Method string    `json:"method"`
	Image  string    `json:"image,omitempty"`
	Sent   time.Time `json:"sent"`
}

// Stuck is one pod's stuck-at view at At.
type Stuck struct {
	Pod     string     `json:"pod"`
	UID     string     `json:"uid"`
	At      time.Time  `json:"at"`
	Calls   []InFlight `json:"calls"`
	Waiting *Waiting   `json:"waiting,omitempty"`
}

// StuckNote is what the watcher says about a pod's stuck-at view
// (Options.OnStuck): Event is "slow" (Call has been open for one more of
// the ages the view says: 0.5 s, 5 s, 30 s, 1 m, 2 m, 4 m, then every
// 5 m), "gave-up" (the kubelet's deadline for Call passed), "answered"
// (Call, said slow before, was answered), "collides" (Call, just sent,
// reuses the name of an earlier call still held), "waiting" (the pod
// began to wait for Waiting's reason) or "clear" (it stopped waiting).
type StuckNote struct {
	Event string    `json:"event"`
	Call  *InFlight `json:"call,omitempty"`
	Stuck
}

// stuckInfo is what a call in flight keeps for the stuck-at view.
type stuckInfo struct {
	method   string
	sent     time.Time
	deadline time.Time // zero: none
	from     string
	rule     string
	name     string // reserved-name key, "" for none
	attempt  *int
	try      int
	previous string
	collides *Earlier
	said     int // how many "slow" notes were given
}

// holdNames is how long a name the kubelet gave up on is remembered.
const holdNames = 30 * time.Minute

// holder is a call that holds a sandbox or container name at the runtime.
type holder struct {
	Earlier
	at time.Time // when it was sent or given up on, for pruning
}

// podStuck is a pod's state for the view (w.mu held to use).
type podStuck struct {
	sandboxTries int
	lastSandbox  string // why the last sandbox did not do: its failure
	needsImage   string // an image ImageStatus said absent, not pulled yet
	needsSince   time.Time
	pulls        map[string]*pullFails // by image
	gaveUp       []InFlight            // the last calls the kubelet gave up on
	waitKey      string                // the waiting reason last said
	lastPoke     time.Time
}

type pullFails struct {
	n    int
	last time.Time
	err  string
}

// prepareStuck fills a call's stuckInfo as it arrives (w.mu held).
func (w *Watcher) prepareStuck(info *callInfo, c *proxy.Call) {
	s := &stuckInfo{method: c.Name(), sent: c.Arrived}
	if s.sent.IsZero() {
		s.sent = w.opts.Now()
	}
	d, rule := kubeletDeadline(s.method, info.req, w.opts.RequestTimeout)
	if info.csi != nil {
		d, rule = 0, "the kubelet's CSI timeout (csiTimeout, createCSIOperationContext in pkg/volume/csi)"
	}
	s.rule = rule
	switch {
	case !c.Deadline.IsZero():
		s.deadline, s.from = c.Deadline, DeadlineCall
	case d > 0:
		s.deadline, s.from = s.sent.Add(d), DeadlineKubelet
	default:
		s.from = DeadlineNone
	}
	info.stuck = s
	p := info.pod
	if p == nil {
		return
	}
	switch r := info.req.(type) {
	case *runtimeapi.RunPodSandboxRequest:
		md := r.GetConfig().GetMetadata()
		a := int(md.GetAttempt())
		s.attempt = &a
		s.name = md.GetName() + "_" + md.GetNamespace() + "_" + md.GetUid() + "_" + strconv.Itoa(a)
		p.st.sandboxTries++
		s.try, s.previous = p.st.sandboxTries, p.st.lastSandbox
		if s.previous == "" && p.sandboxID != "" && !p.sandboxReady {
			s.previous = "sandbox " + short(p.sandboxID) + " is not ready (SandboxChanged: the kubelet makes a new one)"
		}
		w.claim("sandbox "+s.name, c, s)
	case *runtimeapi.CreateContainerRequest:
		md := r.GetConfig().GetMetadata()
		a := int(md.GetAttempt())
		s.attempt = &a
		s.name = md.GetName() + "_" + strconv.Itoa(a)
		w.claim("container "+r.GetPodSandboxId()+"/"+s.name, c, s)
	case *runtimeapi.PullImageRequest:
		p.st.needsImage = ""
	}
}

// claim notes that c reserves name; a call already holding it is the one
// c collides with (w.mu held).
func (w *Watcher) claim(name string, c *proxy.Call, s *stuckInfo) {
	if w.names == nil {
		w.names = map[string]*holder{}
	}
	if h := w.names[name]; h != nil {
		e := h.Earlier
		s.collides = &e
	}
	w.names[name] = &holder{Earlier: Earlier{Seq: c.Seq, Method: c.Name(), Sent: s.sent, State: "open"}, at: s.sent}
}

// release ends name's hold by call seq: a call that answered, or failed
// but not because the kubelet gave up, holds nothing; one the kubelet gave
// up on keeps it (the runtime was never told) (w.mu held).
func (w *Watcher) release(name string, seq uint64, s *stuckInfo, err error, now time.Time) {
	h := w.names[name]
	if h == nil || h.Seq != seq {
		return
	}
	if gaveUp(err) {
		h.State, h.GaveUpAfterMs, h.at = "gave-up", now.Sub(s.sent).Milliseconds(), now
		h.Error = safe.Line(cri.Message(err))
		return
	}
	delete(w.names, name)
}

// gaveUp says whether err is the caller's deadline or cancellation: the
// kubelet stopped waiting.
func gaveUp(err error) bool {
	if err == nil {
		return false
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

// kubeletGaveUp says whether a call that ended at end with err is one the
// kubelet gave up on: its deadline passed (through the proxy the caller's
// deadline ends the call upstream as DeadlineExceeded or Canceled).
func kubeletGaveUp(s *stuckInfo, err error, end time.Time) bool {
	return gaveUp(err) && !s.deadline.IsZero() && !end.Before(s.deadline.Add(-250*time.Millisecond))
}

// stuckDone updates the view as call c answers (w.mu held).
func (w *Watcher) stuckDone(info *callInfo, c *proxy.Call, resp proto.Message) {
	s := info.stuck
	if s == nil {
		return
	}
	now := w.opts.Now()
	if s.name != "" {
		key := "sandbox " + s.name
		if _, ok := info.req.(*runtimeapi.CreateContainerRequest); ok {
			key = "container " + info.req.(*runtimeapi.CreateContainerRequest).GetPodSandboxId() + "/" + s.name
		}
		w.release(key, c.Seq, s, c.Err, now)
	}
	p := info.pod
	if p == nil || !p.followed {
		return
	}
	in := p.inFlight(info, c.Seq, now)
	switch {
	case kubeletGaveUp(s, c.Err, now):
		in.State, in.Error = "gave-up", safe.Line(cri.Message(c.Err))
		p.st.gaveUp = append(p.st.gaveUp, in)
		if len(p.st.gaveUp) > 4 {
			p.st.gaveUp = p.st.gaveUp[1:]
		}
		w.noteStuck(p, "gave-up", &in, now)
	case s.said > 0:
		in.State = "answered"
		if c.Err != nil {
			in.Error = safe.Line(cri.Message(c.Err))
		}
		w.noteStuck(p, "answered", &in, now)
	}
	switch r := info.req.(type) {
	case *runtimeapi.RunPodSandboxRequest:
		if c.Err != nil {
			p.st.lastSandbox = "RunPodSandbox #" + strconv.FormatUint(c.Seq, 10) + " failed: " + safe.Line(cri.Message(c.Err))
		} else {
			p.st.lastSandbox = ""
		}
	case *runtimeapi.PullImageRequest:
		img := r.GetImage().GetImage()
		if p.st.pulls == nil {
			p.st.pulls = map[string]*pullFails{}
		}
		if c.Err != nil && !gaveUp(c.Err) {
			f := p.st.pulls[img]
			if f == nil {
				f = &pullFails{}
				p.st.pulls[img] = f
			}
			f.n++
			f.last, f.err = now, safe.Line(cri.Message(c.Err))
		} else if c.Err == nil {
			delete(p.st.pulls, img)
		}
	case *runtimeapi.ImageStatusRequest:
		if c.Err == nil {
			if resp, ok := resp.(*runtimeapi.ImageStatusResponse); ok && resp.GetImage() == nil {
				p.st.needsImage, p.st.needsSince = r.GetImage().GetImage(), now
			}
		}
	case *runtimeapi.CreateContainerRequest:
		p.st.needsImage = ""
	}
}

// PullBackOff is the image manager's back-off after n failed pulls in a
// row: min(10s·2^(n-1), 300s).
func PullBackOff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := ImageBackOff
	for i := 1; i < n && d < MaxImageBackOff; i++ {
		d *= 2
	}
	return min(d, MaxImageBackOff)
}

// inFlight is the view of call info (seq) at now (w.mu held).
func (p *Pod) inFlight(info *callInfo, seq uint64, now time.Time) InFlight {
	s := info.stuck
	in := InFlight{Seq: seq, Method: s.method, Container: info.container, Sent: s.sent, AgeMs: now.Sub(s.sent).Milliseconds(),
		DeadlineFrom: s.from, Rule: s.rule, State: "open", Name: s.name, Attempt: s.attempt, CollidesWith: s.collides}
	if info.step != nil {
		in.Step = info.step.step.Name
	}
	if s.try > 1 {
		in.Try, in.Previous = s.try, s.previous
	}
	if !s.deadline.IsZero() {
		d := s.deadline
		in.Deadline, in.DeadlineMs = &d, d.Sub(s.sent).Milliseconds()
		if !now.Before(d) {
			in.State = "past-deadline"
		}
	}
	return in
}

// stuckView is p's stuck-at view at now (w.mu held).
func (p *Pod) stuckView(now time.Time) Stuck {
	v := Stuck{Pod: p.Key(), UID: p.UID, At: now, Calls: []InFlight{}}
	for seq, info := range p.w.calls {
		if info.pod == p && info.stuck != nil && now.Sub(info.stuck.sent) >= stuckAfter() {
			v.Calls = append(v.Calls, p.inFlight(info, seq, now))
		}
	}
	sort.Slice(v.Calls, func(i, j int) bool { return v.Calls[i].Seq < v.Calls[j].Seq })
	v.Waiting = p.waiting(now)
	return v
}

// ownCalls says whether p has a call of the pod worker's in flight
// (status reads and probes left out) (w.mu held).
func (p *Pod) ownCalls() bool {
	for _, info := range p.w.calls {
		if info.pod == p && info.csi == nil && info.step != nil && info.step.slot == "work" {
			return true
		}
	}
	return false
}

// waiting is why p waits with no call of its own in flight, if it does
// (w.mu held).
func (p *Pod) waiting(now time.Time) *Waiting {
	if p.removed || p.stopping || p.ownCalls() {
		return nil
	}
	if img := p.st.needsImage; img != "" {
		for seq, info := range p.w.calls {
			if info.pod != nil && info.pod != p && info.stuck != nil && info.stuck.method == "PullImage" {
				pr, _ := info.req.(*runtimeapi.PullImageRequest)
				return &Waiting{Why: "image-pull-queue", Since: p.st.needsSince, Image: img,
					Behind: &Behind{Pod: info.pod.Key(), Seq: seq, Method: "PullImage", Image: pr.GetImage().GetImage(), Sent: info.stuck.sent},
					Text: fmt.Sprintf("image %s is not on the node, and no PullImage of this pod's is in flight: it waits behind %s's PullImage of %s (#%d, %s), as the kubelet pulls one image at a time (serializeImagePulls, true by default: serialImagePuller, pkg/kubelet/images/puller.go)",
						safe.Line(img), info.pod.Key(), safe.Line(pr.GetImage().GetImage()), seq, age(now.Sub(info.stuck.sent)))}
			}
		}
	}
	var worst *Waiting
	for img, f := range p.st.pulls {
		d := PullBackOff(f.n)
		until := f.last.Add(d)
		if now.Before(until) && (worst == nil || until.After(*worst.Until)) {
			worst = &Waiting{Why: "pull-backoff", Since: f.last, Until: &until, Image: img, Failures: f.n, BackOffMs: d.Milliseconds(),
				Text: fmt.Sprintf("ImagePullBackOff: %d failed pull(s) of %s; the image manager pulls it again after %s, at %s (10 s doubling to 300 s: imageBackOffPeriod, MaxImageBackOff, pkg/kubelet/kubelet.go; EnsureImageExists, pkg/kubelet/images/image_manager.go); the last error: %s",
					f.n, safe.Line(img), age(d), until.UTC().Format("15:04:05"), f.err)}
		}
	}
	if worst != nil {
		return worst
	}
	if since := p.lastCallEnd(); p.sandboxID == "" && p.st.lastSandbox != "" && now.Before(since.Add(SyncBackOff+time.Minute)) {
		// Past the back-off and a minute more with no new try, the pod
		// is likely gone (deleted before its sandbox was made).
		until := since.Add(SyncBackOff)
		return &Waiting{Why: "sandbox-retry", Since: since, Until: &until,
			Text: "no sandbox: " + p.st.lastSandbox + "; the pod worker tries again after its back-off, 10–15 s (backOffPeriod, pkg/kubelet/kubelet.go, jittered by podWorkers.completeWork, pkg/kubelet/pod_workers.go)"}
	}
	if p.sandboxID == "" && p.st.sandboxTries == 0 && p.volumesOnly() {
		// Seen in a CSI call only: the volume manager's work.
		until := p.firstSeen.Add(VolumeWait)
		return &Waiting{Why: "volumes", Since: p.firstSeen, Until: &until,
			Text: "no CRI call yet: the pod worker waits for the pod's volumes before its sandbox (WaitForAttachAndMount, pkg/kubelet/volumemanager/volume_manager.go, up to 2m3s: podAttachAndMountTimeout), then fails the sync and retries it"}
	}
	return nil
}

// volumesOnly says whether the pod was seen in CSI calls that mount its
// volumes, and in no other call (w.mu held).
func (p *Pod) volumesOnly() bool {
	if p.config != nil || p.joined {
		return false
	}
	mounts := false
	for _, k := range p.allKinds() {
		switch k {
		case steps.KindVolumes:
			mounts = true
		default:
			return false
		}
	}
	return mounts
}

// allKinds are the kinds of the pod's steps, finished and open (w.mu held).
func (p *Pod) allKinds() []steps.Kind {
	var out []steps.Kind
	for i := range p.steps {
		out = append(out, p.steps[i].Kind)
	}
	for _, o := range p.open {
		out = append(out, o.kind)
	}
	return out
}

// lastCallEnd is when the pod's last finished step ended (w.mu held).
func (p *Pod) lastCallEnd() time.Time {
	var t time.Time
	for i := range p.steps {
		if e := p.steps[i].Started.Add(p.steps[i].Duration); e.After(t) {
			t = e
		}
	}
	if t.IsZero() {
		t = p.firstSeen
	}
	return t
}

// checkStuck says the calls that crossed one more age, and the pods that
// began or stopped waiting; it pokes each pod with a call in flight once
// a second, so that the TUI's ages tick (w.mu held).
func (w *Watcher) checkStuck() {
	now := w.opts.Now()
	for name, h := range w.names {
		// A name given up on is held at most holdNames: past it, the
		// runtime is assumed to have made or dropped it.
		if h.State == "gave-up" && now.Sub(h.at) > holdNames {
			delete(w.names, name)
		}
	}
	for seq, info := range w.calls {
		p, s := info.pod, info.stuck
		if p == nil || s == nil || !p.followed {
			continue
		}
		age := now.Sub(s.sent)
		if age >= stuckAfter() && now.Sub(p.st.lastPoke) >= time.Second {
			p.st.lastPoke = now
			w.pokes = append(w.pokes, p)
		}
		if age < nextStuck(s.said) {
			continue
		}
		for age >= nextStuck(s.said) {
			s.said++
		}
		in := p.inFlight(info, seq, now)
		w.noteStuck(p, "slow", &in, now)
	}
	for _, p := range w.list {
		if !p.followed {
			continue
		}
		wt := p.waiting(now)
		key := ""
		if wt != nil {
			key = wt.Why + " " + wt.Image
			if wt.Behind != nil {
				key += " " + strconv.FormatUint(wt.Behind.Seq, 10)
			}
		}
		if key == p.st.waitKey {
			continue
		}
		ev := "waiting"
		if key == "" {
			ev = "clear"
		}
		p.st.waitKey = key
		w.noteStuck(p, ev, nil, now)
	}
}

// noteStuck queues a note for Options.OnStuck (w.mu held).
func (w *Watcher) noteStuck(p *Pod, event string, call *InFlight, now time.Time) {
	if w.opts.OnStuck == nil {
		return
	}
	w.stuckQ = append(w.stuckQ, stuckQueued{p, StuckNote{Event: event, Call: call, Stuck: p.stuckView(now)}})
}

type stuckQueued struct {
	pod  *Pod
	note StuckNote
}

// Stuck is the pod's stuck-at view now: its calls in flight for 0.5 s or
// more, oldest first, and why it waits when none of its own is.
func (p *Pod) Stuck() Stuck {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.stuckView(p.w.opts.Now())
}

// GaveUp is the pod's last calls (up to 4) the kubelet gave up on.
func (p *Pod) GaveUp() []InFlight {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return append([]InFlight(nil), p.st.gaveUp...)
}

// Line says a note in one line of text (untrusted text made safe):
//
//	stuck: default/web: RunPodSandbox #12 3m12s, no answer; the kubelet gives up at 4m0s (2 × runtimeRequestTimeout ...)
func (n StuckNote) Line() string {
	switch n.Event {
	case "waiting":
		if n.Waiting == nil {
			return ""
		}
		return "waiting: " + n.Pod + ": " + n.Waiting.Text
	case "clear":
		return "waiting: " + n.Pod + ": no longer"
	}
	if n.Call == nil {
		return ""
	}
	return "stuck: " + n.Pod + ": " + n.Call.Describe(n.Event)
}

// Describe says the call in words, for a note of event.
func (c InFlight) Describe(event string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%d", c.Method, c.Seq)
	if c.Container != "" {
		fmt.Fprintf(&b, " (%s)", safe.Line(c.Container))
	}
	old := age(time.Duration(c.AgeMs) * time.Millisecond)
	switch event {
	case "answered":
		fmt.Fprintf(&b, " answered after %s", old)
		if c.Error != "" {
			fmt.Fprintf(&b, ": %s", c.Error)
		}
		return b.String()
	case "gave-up":
		fmt.Fprintf(&b, ": the kubelet gave up after %s (its deadline: %s) and will retry; the runtime was not told, and may still be working on it", old, c.Rule)
		if c.Name != "" {
			b.WriteString(" and keep its name reserved (a retry with the same name fails: \"name is reserved\")")
		}
		return b.String()
	}
	fmt.Fprintf(&b, " %s, no answer", old)
	switch {
	case c.Deadline == nil:
		fmt.Fprintf(&b, "; the kubelet sets no deadline (%s)", c.Rule)
	case c.State == "past-deadline":
		fmt.Fprintf(&b, "; past the kubelet's deadline: it gave up at %s (%s) and will retry", age(time.Duration(c.DeadlineMs)*time.Millisecond), c.Rule)
	default:
		from := ""
		if c.DeadlineFrom == DeadlineCall {
			from = ", the call's own deadline"
		}
		fmt.Fprintf(&b, "; the kubelet gives up at %s (%s%s)", age(time.Duration(c.DeadlineMs)*time.Millisecond), c.Rule, from)
	}
	if c.Try > 1 {
		fmt.Fprintf(&b, "; sandbox try %d", c.Try)
		if c.Attempt != nil {
			fmt.Fprintf(&b, " (attempt %d)", *c.Attempt)
		}
		if c.Previous != "" {
			fmt.Fprintf(&b, ", the previous: %s", c.Previous)
		}
	}
	if e := c.CollidesWith; e != nil {
		fmt.Fprintf(&b, "; the same name as %s #%d sent at %s", e.Method, e.Seq, e.Sent.UTC().Format("15:04:05"))
		if e.State == "gave-up" {
			fmt.Fprintf(&b, ", which the kubelet gave up on after %s", age(time.Duration(e.GaveUpAfterMs)*time.Millisecond))
		} else {
			b.WriteString(", still open")
		}
		b.WriteString(": the runtime still holds the name (\"name is reserved\")")
	}
	return b.String()
}

// collidesWarning is the failed step's warning for a call whose name an
// earlier call still holds.
func collidesWarning(method string, e *Earlier) string {
	w := fmt.Sprintf("%s reused the name of %s #%d (sent %s", method, e.Method, e.Seq, e.Sent.UTC().Format("15:04:05.000"))
	if e.State == "gave-up" {
		w += fmt.Sprintf(", given up on by the kubelet after %s", age(time.Duration(e.GaveUpAfterMs)*time.Millisecond))
	} else {
		w += ", still open"
	}
	return w + "): the runtime still holds that name for the earlier call, which is the cause"
}

// age says a duration as the view does: 0.5s, 12s, 3m12s, 1h2m0s.
func age(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	default:
		return d.Round(time.Second).String()
	}
}

// stuckNotes are the warnings a call's answer adds to its step: the
// earlier call whose name it reused, and that the kubelet gave up on it.
func stuckNotes(info *callInfo, c *proxy.Call) []string {
	s := info.stuck
	if s == nil || c.Err == nil {
		return nil
	}
	var out []string
	end := c.Start.Add(c.Duration)
	if c.Start.IsZero() {
		end = c.Arrived.Add(c.Duration)
	}
	if kubeletGaveUp(s, c.Err, end) {
		waited := end.Sub(s.sent)
		out = append(out, fmt.Sprintf("the kubelet gave up on %s #%d after %s (its deadline: %s) and will retry; the runtime was not told and may still be working on it",
			s.method, c.Seq, age(waited), s.rule))
	}
	if s.collides != nil {
		out = append(out, collidesWarning(s.method, s.collides))
	}
	return out
}

// showInFlight puts the calls of open step o that are in flight into its
// copy s, for the TUI: the title says the oldest, its age and the
// kubelet's deadline; each is a request "sent, no answer yet" (w.mu held).
func (p *Pod) showInFlight(o *openStep, s *steps.Step) {
	now := p.w.opts.Now()
	var oldest *InFlight
	for seq, info := range p.w.calls {
		if info.step != o || info.stuck == nil {
			continue
		}
		in := p.inFlight(info, seq, now)
		s.Requests = append(s.Requests, steps.Request{Method: in.Method, Message: info.shown,
			Note: "sent " + age(now.Sub(in.Sent)) + " ago, no answer yet"})
		if now.Sub(in.Sent) >= stuckAfter() && (oldest == nil || in.Seq < oldest.Seq) {
			oldest = &in
		}
	}
	if oldest != nil {
		s.Title = oldest.Describe("slow")
	}
}

// showWaiting adds to the steps, for the TUI, a running "waiting" step
// when the pod waits with no call of its own in flight (w.mu held).
func (p *Pod) showWaiting(out []steps.Step) []steps.Step {
	wt := p.waiting(p.w.opts.Now())
	if wt == nil {
		return out
	}
	st := steps.StageContainers
	if len(out) > 0 {
		st = out[len(out)-1].Stage
	}
	return append(out, steps.Step{ID: len(out) + 1, Stage: st, Kind: steps.KindBackoff, Name: "waiting/" + wt.Why,
		Title: "waiting: " + wt.Text, State: steps.Running, Started: wt.Since})
}
