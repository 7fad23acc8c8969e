package steps

import (
	"context"
	"errors"
	"fmt"
	"github.com/podstep/podstep/internal/explain"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/node"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/volume"
)

// Options configure an Engine.
type Options struct {
	// Config shapes the CRI configs (root dir, log dir, DNS, cgroups).
	// Its Node is set by New from Node.
	Config podcfg.Options
	// GracePeriod overrides the pod's terminationGracePeriodSeconds at teardown when set.
	GracePeriod *int64
	// PollInterval is how often the init stage asks ContainerStatus while
	// waiting for an init container to exit (the kubelet's PLEG relists every 1 s).
	PollInterval time.Duration
	// InitTimeout bounds the wait for one init container (0 = 5 minutes).
	InitTimeout time.Duration
	// MaxRestarts is how many times podstep restarts one container, as the
	// kubelet would, before it gives up (CrashLoopBackOff); negative = no limit.
	MaxRestarts int
	// BackoffScale multiplies the kubelet's back-off delays (10 s doubling to
	// 5 min) for the time podstep really waits (0 = 1, the kubelet's own).
	BackoffScale float64
	// Settle is how long the relist step after the last container watches
	// for containers that exit (0 = no relist step).
	Settle time.Duration
	// WaitReady adds the ready stage: probes run until the pod is Ready.
	WaitReady bool
	// CgroupDriverSet says Config.CgroupDriver was given (--cgroup-driver),
	// not defaulted: a runtime that reports another driver then gets a
	// warning that the flag is not used.
	CgroupDriverSet bool
	// ReadyTimeout bounds the ready stage (0 = 2 minutes).
	ReadyTimeout time.Duration
	// From says where a node setting of Config came from, by its kubelet
	// name (SettingClusterDNS, ...): "configz of node X", "--cluster-dns",
	// "default". The steps that use a setting say it; a setting not in the
	// map is its flag's.
	From map[string]string
	// Node is the node the pod runs on, chosen by the caller (podstep run:
	// --node, else the manifest's Node, else this machine); nil means this
	// machine (node.Local()). The admit step checks the pod against it, and
	// New hands its v1 Node to the CRI configs (Config.Node: name,
	// allocatable, capacity) and to the volume plugins (allocatable).
	Node *node.Node
	// Simulated says the runtime is podstep's built-in simulator (internal/sim):
	// the engine tells it the ports a container's probes and hooks reach
	// (sim.MetadataProbePorts), probes a host-network pod at
	// sim.HostNetworkAddress, and says what each simulated verdict rests on.
	Simulated bool
	// Runtime is the runtime's endpoint, recorded in the marker of each
	// directory the engine makes (mark.Holder), so that `podstep cleanup`
	// knows which runtime a left directory's pod ran on.
	Runtime string
	// Tokens mints service-account tokens for serviceAccountToken
	// projections (internal/cluster: the API server's TokenRequest, as the
	// kubelet's token manager); nil: podstep has no API server and such a
	// volume fails. Every token it returns is redacted like a Secret value.
	Tokens volume.TokenSource
	// CSI are the node's CSI drivers (--csi-endpoint, plugins_registry):
	// the volumes stage calls their node services for CSI volumes, each
	// call recorded as the stage's; nil: no driver, and a CSI volume fails.
	CSI *csi.Drivers
	// KeepPods keeps each step's Pod (the pod's state after it) in the
	// plan, for Steps: a snapshot per step, each as big as the pod, so a
	// run keeps memory quadratic in the containers (issue 34). bench's
	// startup SLI reads them; without it only the StepDone event's Step
	// has its Pod.
	KeepPods bool
	// Now is the clock (nil = time.Now).
	Now func() time.Time
}

// Engine walks one pod through the kubelet's creation path.
//
// Two kinds of caller share an Engine. The runner calls the run methods
// (Next, Continue, Retry, PlanTeardown, Teardown) one at a time, from one
// goroutine or handing over between calls (the TUI runs each in a new
// command); a run method called while a step runs returns ErrRunning.
// Frontends call the read methods (Steps, NextStep, PodState, Failed,
// Finished, Breakpoint, SandboxID, ContainerLog, ContainerLogPath,
// LeftBehind), Subscribe, and toggle breakpoints from any goroutine, at any
// time. The rule:
//
//   - mu guards the plan and where the run is: steps (the slice and every
//     field of every Step in it), next, current, failed, teardown,
//     restarting, breaks and stepBrk. Everyone takes it for them.
//   - rt (with every containerRuntime in it) and opts.Config.CgroupDriver
//     belong to the runner: the running step's action reads and writes
//     them without the lock. The few fields the read methods look at are
//     marked "published": they are written under mu (by the action too),
//     and the read methods read them under mu.
//   - Steps and NextStep also rebuild the pending steps' requests, which
//     read all of rt; they do so, under mu, only while no step runs
//     (current == nil). Next sets current under mu before the action and
//     clears it under mu after, so these reads are ordered after the last
//     action's writes and before the next one's.
//   - tracker, redactor and subs have their own locks; bundle, pod, client
//     and the rest of opts do not change after New.
//
// TestConcurrentReads checks the rule under -race.
type Engine struct {
	// dropped says which fields a disabled feature gate dropped from the
	// pod (dropDisabledFields); the admit step warns of them.
	dropped []string
	bundle  *manifest.Bundle
	pod     *corev1.Pod
	client  *cri.Client
	opts    Options
	now     func() time.Time

	// Tracker holds the pod's status; its StepChanges, called by New and
	// then only by Next, counts each step's Changes and Events from the pod
	// after the step before (at New, before the first).
	tracker *podstate.Tracker

	mu      sync.Mutex
	steps   []*Step
	next    int   // index of the next step to run
	current *Step // the running step; nil between steps
	breaks  map[Stage]bool
	stepBrk map[int]bool
	failed  *Step
	// startFailed is the first container start (its image, create, start
	// or postStart hook) that failed where the kubelet's SyncPod goes on
	// with the next container: a regular container's or a sidecar's. It
	// becomes failed when the start loop is over (goesOn).
	startFailed *Step
	teardown    bool // teardown steps were planned
	// restarting is set by the running step when it planned a restart: its
	// failure is one the kubelet recovers from, so the run goes on.
	restarting bool

	rt podRuntime // the runner's; see the rule above

	// imageAnnotations are podcfg.PodAnnotations of the pod, which the image
	// manager's ImageSpec carries (pullStep.imageSpec); set by New.
	imageAnnotations map[string]string

	redactor *cri.Redactor

	keyringOnce sync.Once
	pullKeys    *pullKeyring // the pod's pull secrets, read once (keyring())

	subs subscribers // the frontends' event subscriptions (Subscribe)
}

// podRuntime is what the engine learned from the runtime and created. It
// belongs to the runner (see Engine); fields marked "published" are written
// under Engine.mu, for LeftBehind, SandboxID and ContainerLog.
type podRuntime struct {
	podDir        string // set by New
	dirsCreated   bool   // published: this run made the pod dir (teardown removes only what it made)
	logDir        string // published: the pod log dir, when this run made it
	volumePaths   map[string]string
	auth          map[string][]*runtimeapi.AuthConfig // by image: every matching credential, best first
	authSource    map[string]string                   // by image: "secret X, registry Y"
	configWarned  map[string]bool                     // by image: the simulator's image config warning was given
	runtimeName   string
	handlers      []string
	handlerUserns map[string]bool                  // by handler name: RuntimeStatus features.user_namespaces
	statusSeen    bool                             // runtime-status read the runtime's Status
	userns        usernsState                      // the pod's user namespace (hostUsers: false)
	imageVolumes  map[string]*runtimeapi.ImageSpec // by volume name, once the image-volumes step ensured them
	networkReady  bool
	cgroupDriver  string
	flagDriver    string                       // --cgroup-driver, before the runtime's answer replaced it
	sandboxConfig *runtimeapi.PodSandboxConfig // published: as sent, once RunPodSandbox succeeded
	planned       *plannedSandbox              // before that, the cached plan
	sandboxID     string                       // published
	sandboxGone   bool                         // published: RemovePodSandbox succeeded (or found it gone)
	removed       map[string]bool              // published: container IDs the runtime confirmed removed
	dirsRemoved   map[string]bool              // published: directories teardown removed
	podIPs        []string
	pullBackOff   map[string]*backOff          // the image pull back-off, by image
	pullErr       map[string]string            // the last pull error, by image (shown in ImagePullBackOff)
	containers    map[string]*containerRuntime // set by New (the values change)
	order         []string                     // set by New: container names in creation order
	// csiVolumes are the CSI volumes the volumes stage staged or
	// published (or may have: a call that timed out), for teardown.
	csiVolumes []*volume.CSIResult
	// deviceMounts are the block devices of local PersistentVolumes the
	// volumes stage mounted (local MountDevice), for the teardown's
	// UnmountDevice after the pod's bind mounts are gone.
	deviceMounts []*volume.DeviceMount
}

// plannedSandbox caches the sandbox config built for the cgroup driver it names.
type plannedSandbox struct {
	driver string
	cfg    *runtimeapi.PodSandboxConfig
	warns  []podcfg.Warning
}

// containerRuntime is what the engine knows of one container. Like
// podRuntime it belongs to the runner; fields marked "published" are
// written under Engine.mu.
type containerRuntime struct {
	spec      *corev1.Container
	init      bool
	termLog   string // host path of the termination-log file
	imageRef  string
	imageUser string
	// imageUserUnknown: the simulator could not tell the image's user
	// (sim.AnnotationImageConfig), so imageUser "" is not root.
	imageUserUnknown bool
	// simImage is the image as the simulator's ImageStatus described it
	// (sim.ImageOf: the config it read from the registry, if any).
	simImage sim.Image
	config   *runtimeapi.ContainerConfig // published
	id       string                      // published
	oldIDs   []string                    // published: containers of earlier attempts, still in the runtime
	restarts int                         // the attempt number: metadata.attempt and <restarts>.log
	// exitExplained explains the container's last non-zero exit
	// (internal/explain): a crash loop's give-up step shows it, the cause
	// of the loop.
	exitExplained *explain.Explanation
	startedAt     time.Time
	exited        bool

	// expanded is set once the redactor knows this container's Secret
	// expansions, computed for the pod IPs expandedFor (noteExpansions).
	expanded    bool
	expandedFor string

	exitCode   int32     // of the last exit seen
	finishedAt time.Time // of the last exit seen
	crash      *backOff  // the restart back-off (nil: never restarted)
	extra      int       // restarts allowed beyond MaxRestarts (a retried give-up)
}

// New plans the pod's creation. It contacts nothing and cannot fail: a
// manifest that could not be planned is refused by internal/manifest.
func New(b *manifest.Bundle, client *cri.Client, o Options) *Engine {
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = 5 * time.Minute
	}
	if o.BackoffScale <= 0 {
		o.BackoffScale = 1
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Config.Seen.IsZero() {
		o.Config.Seen = o.Now()
	}
	if o.Node == nil {
		o.Node = node.Local()
	}
	o.Config.Node = o.Node.Object
	if o.Config.ExtraLabels == nil {
		o.Config.ExtraLabels = map[string]string{}
	}
	o.Config.ExtraLabels[mark.ManagedLabel] = "true"
	b, dropped := dropDisabledFields(b, o.Config.Gates)
	o.Config.QOS = podcfg.QOSClass(b.Pod) // once, not per container config
	e := &Engine{dropped: dropped,
		bundle: b, pod: b.Pod, client: client, opts: o, now: o.Now,
		breaks: map[Stage]bool{}, stepBrk: map[int]bool{},
	}
	e.tracker = podstate.New(b.Pod, o.Now)
	e.tracker.NotAdmitted() // the admit step admits it (STATUS Pending until then)
	e.tracker.SetGates(o.Config.Gates)
	e.setupRedactor()
	e.tracker.StepChanges(false)
	e.rt.podDir = filepath.Join(o.Config.RootDir, "pods", string(b.Pod.UID))
	e.imageAnnotations = podcfg.PodAnnotations(b.Pod, o.Config)
	e.rt.containers = map[string]*containerRuntime{}
	e.rt.removed = map[string]bool{}
	e.rt.dirsRemoved = map[string]bool{}
	e.rt.auth = map[string][]*runtimeapi.AuthConfig{}
	e.rt.authSource = map[string]string{}
	e.rt.configWarned = map[string]bool{}
	e.rt.pullBackOff = map[string]*backOff{}
	e.rt.pullErr = map[string]string{}
	for i := range b.Pod.Spec.InitContainers {
		c := &b.Pod.Spec.InitContainers[i]
		e.rt.containers[c.Name] = e.newContainer(c, true)
		e.rt.order = append(e.rt.order, c.Name)
	}
	for i := range b.Pod.Spec.Containers {
		c := &b.Pod.Spec.Containers[i]
		e.rt.containers[c.Name] = e.newContainer(c, false)
		e.rt.order = append(e.rt.order, c.Name)
	}
	for _, name := range e.rt.order {
		e.noteExpansions(e.rt.containers[name], e.configPodIPs())
	}
	e.opts.CSI = o.CSI.For(e.client) // this engine's calls, its own clients
	e.plan()
	e.attach()
	return e
}

func (e *Engine) newContainer(c *corev1.Container, init bool) *containerRuntime {
	return &containerRuntime{
		spec: c, init: init,
		termLog: filepath.Join(e.rt.podDir, "containers", c.Name, podcfg.TerminationLogName()),
	}
}

// Pod returns the pod being created (defaulted).
func (e *Engine) Pod() *corev1.Pod { return e.pod }

// Bundle returns the manifest.
func (e *Engine) Bundle() *manifest.Bundle { return e.bundle }

// PodState returns the pod's state now.
func (e *Engine) PodState() podstate.Snapshot { return e.tracker.Snapshot() }

// Steps returns a copy of the plan with each step's current state. A
// pending step's Requests are rebuilt from what the engine knows now, so
// they show exactly what will be sent.
func (e *Engine) Steps() []Step {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Step, len(e.steps))
	for i, s := range e.steps {
		// While a step runs, its action writes rt without the lock, so
		// pending requests are rebuilt only between steps (see Engine); in
		// between they show what was last built.
		if s.State == Pending && e.current == nil {
			s.Requests = e.requests(s)
		}
		out[i] = *s
		out[i].Calls = append([]cri.Call(nil), s.Calls...)
	}
	return out
}

// StepsAsRun returns a copy of the plan as Steps does, but without
// rebuilding the pending steps' requests (they keep what was last built):
// for what reads how the run went (its outcome, its timing), where a
// rebuild of every pending step, each a walk of the pod, made an
// interrupted run of a big pod take minutes to end (issue 34).
func (e *Engine) StepsAsRun() []Step {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Step, len(e.steps))
	for i, s := range e.steps {
		out[i] = *s
		out[i].Calls = append([]cri.Call(nil), s.Calls...)
	}
	return out
}

// NextStep returns the step that Next would run, or false at the end.
func (e *Engine) NextStep() (Step, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.next >= len(e.steps) {
		return Step{}, false
	}
	if e.current == nil {
		e.steps[e.next].Requests = e.requests(e.steps[e.next])
	}
	return *e.steps[e.next], true
}

// Failed returns the failed step, if the pod failed.
func (e *Engine) Failed() (Step, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed == nil {
		return Step{}, false
	}
	return *e.failed, true
}

// Finished reports whether no creation step is left to run (all done, or one failed).
func (e *Engine) Finished() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failed != nil || e.next >= len(e.steps) || e.steps[e.next].Stage == StageTeardown
}

// ToggleBreakStage sets or clears a breakpoint before the first step of stage.
func (e *Engine) ToggleBreakStage(st Stage) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.breaks[st] = !e.breaks[st]
	return e.breaks[st]
}

// ToggleBreakStep sets or clears a breakpoint before step id.
func (e *Engine) ToggleBreakStep(id int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stepBrk[id] = !e.stepBrk[id]
	return e.stepBrk[id]
}

// Breakpoint reports whether execution stops before step id.
func (e *Engine) Breakpoint(id int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.breakAt(id)
}

func (e *Engine) breakAt(id int) bool {
	if id < 1 || id > len(e.steps) {
		return false
	}
	s := e.steps[id-1]
	if e.stepBrk[id] {
		return true
	}
	// A stage breakpoint stops before the stage's first step.
	return e.breaks[s.Stage] && (id == 1 || e.steps[id-2].Stage != s.Stage)
}

// ErrNoStep is returned by Next when nothing is left to run.
var ErrNoStep = errors.New("no step left to run")

// ErrRunning is returned by a run method called while a step runs: the
// runner calls them one at a time (see Engine).
var ErrRunning = errors.New("a step is running")

// Next runs exactly one step and returns it. A failed step is returned
// with State Failed and a nil error; the error is for misuse (nothing to
// run, or a step already running) only.
func (e *Engine) Next(ctx context.Context) (Step, error) {
	e.mu.Lock()
	if e.current != nil {
		e.mu.Unlock()
		return Step{}, ErrRunning
	}
	if e.next >= len(e.steps) || (e.failed != nil && e.steps[e.next].Stage != StageTeardown) {
		e.mu.Unlock()
		return Step{}, ErrNoStep
	}
	s := e.steps[e.next]
	e.current = s
	s.State = Running
	s.Started = e.now()
	s.Requests = e.requests(s)
	snap := *s
	e.mu.Unlock()
	e.emit(Event{Kind: StepStarted, Step: snap})

	res := e.redactResult(s.act.run(ctx, e))
	if res.Err != nil && res.Explanation == nil {
		res.Explanation = e.explain(s.Container, res, nil)
	}
	// The pod's snapshot, a copy as big as the pod, only for those who
	// read it: one per step made a run quadratic in the containers.
	changes, events, pod := e.tracker.StepChanges(e.opts.KeepPods || e.subs.wantPod())

	e.mu.Lock()
	s.Duration = e.now().Sub(s.Started)
	s.Result = res
	if e.opts.KeepPods {
		s.Pod = pod
	}
	s.Changes, s.Events = changes, events
	e.current = nil
	recovered := e.restarting
	e.restarting = false
	if res.Err != nil {
		s.State = Failed
		switch {
		case s.Stage == StageTeardown || recovered:
		case e.goesOn(s):
			if e.startFailed == nil {
				e.startFailed = s
			}
			for _, rest := range e.steps[e.next+1:] {
				if rest.Container == s.Container && rest.Stage != StageTeardown && rest.State == Pending {
					rest.State = Skipped
				}
			}
		default:
			e.failed = s
			for _, rest := range e.steps[e.next+1:] {
				if rest.Stage != StageTeardown {
					rest.State = Skipped
				}
			}
		}
	} else {
		s.State = Done
	}
	e.next++
	// Past the steps a failed container start left (goesOn); once the
	// start loop is over, that failure is the run's.
	for e.next < len(e.steps) && e.steps[e.next].State != Pending && e.steps[e.next].Stage != StageTeardown {
		e.next++
	}
	if e.failed == nil && e.startFailed != nil && !e.inStartLoop(e.next) {
		e.failed, e.startFailed = e.startFailed, nil
		for _, rest := range e.steps[e.next:] {
			if rest.Stage != StageTeardown && rest.State == Pending {
				rest.State = Skipped
			}
		}
	}
	if e.failed != nil && s.Stage != StageTeardown {
		// Skip to teardown steps, if any were planned.
		for e.next < len(e.steps) && e.steps[e.next].Stage != StageTeardown {
			e.next++
		}
	}
	done := *s
	done.Pod = pod
	e.mu.Unlock()
	e.emit(Event{Kind: StepDone, Step: done, Pod: pod})
	return done, nil
}

// Continue runs steps until the next breakpoint, a failure, or the end of
// the creation steps (teardown steps, once planned, run too). It always runs
// at least one step.
func (e *Engine) Continue(ctx context.Context) error {
	first := true
	for {
		e.mu.Lock()
		stop := e.next >= len(e.steps) ||
			(e.failed != nil && e.steps[e.next].Stage != StageTeardown) ||
			(!first && e.breakAt(e.next+1))
		e.mu.Unlock()
		if stop {
			return nil
		}
		first = false
		if _, err := e.Next(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, failed := e.Failed(); failed && !e.inTeardown() {
			return nil
		}
	}
}

// goesOn says whether the kubelet goes on with the next container after
// failed step s (e.mu held): SyncPod's start loop (kuberuntime_manager.go,
// "Step 9: start containers") ignores a regular container's start error,
// and its init loop skips a sidecar's (IsRestartableInitContainer:
// "skipping"), where an init container's aborts the sync. A start is the
// image (EnsureImageExists), CreateContainer, StartContainer and the
// postStart hook (startContainer, kuberuntime_container.go).
func (e *Engine) goesOn(s *Step) bool {
	switch s.Kind {
	case KindPull, KindCreate, KindStart, KindPostStart:
	default:
		return false
	}
	for i := range e.pod.Spec.Containers {
		if e.pod.Spec.Containers[i].Name == s.Container {
			return true
		}
	}
	for i := range e.pod.Spec.InitContainers {
		if c := &e.pod.Spec.InitContainers[i]; c.Name == s.Container {
			return isSidecar(c)
		}
	}
	return false
}

// inStartLoop says whether step i is one of the containers' starts (the
// init and containers stages' steps of a container, and their postStart
// hooks) (e.mu held).
func (e *Engine) inStartLoop(i int) bool {
	if i >= len(e.steps) {
		return false
	}
	st := e.steps[i]
	return st.Container != "" && (st.Stage == StageInit || st.Stage == StageContainers || st.Stage == StagePostStart)
}

func (e *Engine) inTeardown() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.next < len(e.steps) && e.steps[e.next].Stage == StageTeardown
}

// Retry makes the failed step pending again (and the steps it skipped), as
// the kubelet retries a failed sync on its next pass.
func (e *Engine) Retry() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current != nil {
		return ErrRunning
	}
	if e.failed == nil {
		return errors.New("no failed step to retry")
	}
	if e.teardown {
		return errors.New("the pod is being torn down")
	}
	idx := e.failed.ID - 1
	// Retrying a give-up (--max-restarts reached) allows one more restart.
	if f := e.failed; f.Kind == KindBackoff {
		e.rt.containers[f.Container].extra++
	}
	// A container that was created but failed to start, or whose hook
	// failed, is not started again: the kubelet's next sync starts a new
	// one (attempt+1) from the image step, and the old one stays until GC.
	if f := e.failed; f.Kind == KindStart || f.Kind == KindPostStart {
		c := e.rt.containers[f.Container]
		if c.id != "" {
			c.oldIDs = append(c.oldIDs, c.id)
			c.id, c.config, c.exited = "", nil, false
			c.restarts++
		}
		// The container's latest pull step (restarts plan more than one).
		for i := idx; i >= 0; i-- {
			if s := e.steps[i]; s.Kind == KindPull && s.Container == f.Container {
				idx = i
				break
			}
		}
	}
	for _, s := range e.steps[idx:] {
		if s.State == Done && s.Container != "" && s.Container != e.failed.Container {
			continue // another container, started while the kubelet went on (goesOn): the next sync leaves it
		}
		s.State = Pending
		s.Calls = nil
		s.Result = Result{}
		s.Pod, s.Changes, s.Events = nil, nil, nil
	}
	e.failed, e.startFailed = nil, nil
	e.next = idx
	return nil
}

// requests builds step s's requests as they may be shown: redacted.
func (e *Engine) requests(s *Step) []Request {
	reqs := s.act.requests(e)
	for i := range reqs {
		if reqs[i].Message != nil {
			reqs[i].Message = e.redactor.Redact(reqs[i].Message)
		}
		reqs[i].Note = e.redactor.Text(reqs[i].Note)
	}
	return reqs
}

// record attaches a finished CRI call to the running step and emits it.
func (e *Engine) record(call cri.Call) {
	e.mu.Lock()
	s := e.current
	var snap Step
	if s != nil {
		s.Calls = append(s.Calls, call)
		snap = *s
	}
	e.mu.Unlock()
	e.emit(Event{Kind: CallDone, Step: snap, Call: &call})
}

func (e *Engine) sent(method string, _ proto.Message) {
	e.mu.Lock()
	var snap Step
	if e.current != nil {
		snap = *e.current
	}
	e.mu.Unlock()
	e.emit(Event{Kind: CallSent, Step: snap, Method: method})
}

// running is a snapshot of the running step (zero when none).
func (e *Engine) running() Step {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current == nil {
		return Step{}
	}
	return *e.current
}

// Attach connects the engine to its client's call stream. New calls it.
func (e *Engine) attach() {
	if e.client == nil {
		return
	}
	e.client.OnStart(e.sent)
	e.client.OnCall(e.record)
}

// Client returns the CRI client (for frontends that show call history).
func (e *Engine) Client() *cri.Client { return e.client }

// SandboxID returns the sandbox ID once created.
func (e *Engine) SandboxID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rt.sandboxID
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

func containerObject(c *containerRuntime) string {
	if c.init {
		return fmt.Sprintf("spec.initContainers{%s}", c.spec.Name)
	}
	return fmt.Sprintf("spec.containers{%s}", c.spec.Name)
}

// The node settings Options.From names, by the kubelet's configuration
// field names (KubeletConfiguration).
const (
	SettingClusterDNS    = "clusterDNS"
	SettingClusterDomain = "clusterDomain"
	SettingCgroupDriver  = "cgroupDriver"
	SettingCgroupRoot    = "cgroupRoot"
)

// from says where a node setting came from; flag is its flag, the answer
// when Options.From does not name it.
func (e *Engine) from(setting, flag string) string {
	if f := e.opts.From[setting]; f != "" {
		return f
	}
	return flag
}
