package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/cluster/kube"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/session"
)

// Options say what a fleet replays, where, and how.
type Options struct {
	// Pod is the pod to replay; ConfigMaps go along with it. Secrets never
	// do: the runners read them from the API server.
	Pod        *corev1.Pod
	ConfigMaps []*corev1.ConfigMap
	// Nodes names the nodes (--node); else Selector (--nodes, a label
	// selector; "" is every node).
	Nodes    []string
	Selector string
	// Namespace holds the runners, their ConfigMaps and the parent.
	Namespace      string
	Image          string
	PullPolicy     corev1.PullPolicy
	ServiceAccount string
	HostDir        string
	// Endpoint overrides each node's configz runtime endpoint.
	Endpoint string
	// Shadow is --shadow (session.ShadowAuto, ...; "": auto); see
	// Runner.Shadow.
	Shadow string
	// RunArgs are extra `podstep run` flags for every runner.
	RunArgs []string
	// APIServer is the API server URL the runners reach ("": the
	// in-cluster kubernetes Service); see Runner.APIServer.
	APIServer string
	// Timeout is how long a runner may take to start (scheduled, pulled,
	// running) before its node is reported "runner not started".
	Timeout time.Duration
	// RunTimeout bounds one runner's run once started (0: 10 minutes).
	RunTimeout time.Duration
	// Concurrency bounds the runners at once (0: 10).
	Concurrency int
	// Record, when set, is a dir where each node's recording is written.
	Record string
	// Progress gets one line per node event (runner started, result).
	Progress io.Writer
	// PodName is the pod's "namespace/name" for output.
	PodName string
}

// Outcome is a fleet's end.
type Outcome struct {
	ID       string
	Results  []*Result
	Analysis *Analysis
	// Deleted says what podstep deleted at the end.
	Deleted Deleted
}

// Deleted counts what a fleet or a cleanup removed.
type Deleted struct {
	Pods, ConfigMaps, Parents int
	// Left are runner pods still there when podstep stopped waiting (the
	// garbage collector removes them: their parent is gone).
	Left int
}

func (d Deleted) String() string {
	s := fmt.Sprintf("deleted %d runner pod(s), %d ConfigMap(s) and %d parent(s)", d.Pods, d.ConfigMaps, d.Parents)
	if d.Left > 0 {
		s += fmt.Sprintf("; %d runner pod(s) still terminating (their parent is gone: the garbage collector removes them)", d.Left)
	}
	return s
}

// newID is a fleet's id: 8 hex digits.
func newID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type fleet struct {
	c       *Client
	o       Options
	id      string
	parent  *corev1.ConfigMap
	hub     *hub
	mu      sync.Mutex
	done    int
	total   int
	warned  map[string]bool
	deleted Deleted
}

// Run replays the pod on every selected node and analyses the results.
// An error is one before any node ran (the nodes could not be listed, the
// parent could not be made); ctx cancelled (Ctrl-C) deletes the runners
// and reports the nodes as interrupted.
func Run(ctx context.Context, c *Client, o Options) (*Outcome, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 10 * time.Minute
	}
	if o.HostDir == "" {
		o.HostDir = DefaultHostDir
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	nodes, err := selectNodes(ctx, c, o)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no node matches %s", describeSelection(o))
	}
	f := &fleet{c: c, o: o, id: newID(), total: len(nodes), warned: map[string]bool{}}
	if err := f.makeParent(ctx); err != nil {
		return nil, err
	}
	f.warnKubeletRuntime(nodes)
	out := &Outcome{ID: f.id}
	// The watch and the cleanup outlive ctx: Ctrl-C still deletes.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	f.hub = newHub()
	go f.hub.run(bg, c, o.Namespace, LabelFleet+"="+f.id)

	results := make([]*Result, len(nodes))
	sem := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	for i, n := range nodes {
		results[i] = &Result{Node: n.name, Steps: nil}
		if n.obj == nil {
			results[i].Status, results[i].Error, results[i].ExitCode = Failed, n.err, exitRuntime
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			results[i].Status, results[i].ExitCode = Interrupted, exitInterrupted
			continue
		}
		wg.Add(1)
		go func(r *Result, node *corev1.Node) {
			defer wg.Done()
			defer func() { <-sem }()
			f.runNode(ctx, bg, r, node)
			f.progress(r)
		}(results[i], n.obj)
	}
	wg.Wait()
	cctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	defer cancel()
	out.Deleted = f.cleanup(cctx)
	out.Results = results
	out.Analysis = Analyze(results)
	return out, nil
}

type selected struct {
	name string
	obj  *corev1.Node
	err  string
}

func describeSelection(o Options) string {
	if len(o.Nodes) > 0 {
		return "--node " + strings.Join(o.Nodes, ",")
	}
	if o.Selector != "" {
		return "--nodes " + o.Selector
	}
	return "(every node)"
}

// selectNodes reads the named nodes, or lists those matching the selector.
func selectNodes(ctx context.Context, c *Client, o Options) ([]selected, error) {
	if len(o.Nodes) > 0 {
		var out []selected
		for _, name := range o.Nodes {
			n, err := kube.Get[corev1.Node](ctx, c.API, kube.Nodes, "", name)
			if err := c.classify(err, "get", "nodes", ""); err != nil {
				if apierrors.IsNotFound(err) {
					out = append(out, selected{name: name, err: "no such node"})
					continue
				}
				return nil, err
			}
			out = append(out, selected{name: name, obj: n})
		}
		return out, nil
	}
	l, err := kube.List[corev1.NodeList](ctx, c.API, kube.Nodes, "", metav1.ListOptions{LabelSelector: o.Selector})
	if err := c.classify(err, "list", "nodes", ""); err != nil {
		return nil, err
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	out := make([]selected, len(l.Items))
	for i := range l.Items {
		out[i] = selected{name: l.Items[i].Name, obj: &l.Items[i]}
	}
	return out, nil
}

// makeParent creates the parent ConfigMap every other object is owned by.
func (f *fleet) makeParent(ctx context.Context) error {
	p := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:      "podstep-fleet-" + f.id,
		Namespace: f.o.Namespace,
		Labels:    map[string]string{LabelFleet: f.id, LabelRole: RoleParent},
	}, Data: map[string]string{
		"pod":     f.o.PodName,
		"started": time.Now().UTC().Format(time.RFC3339),
		"about":   "podstep fleet: the runners and manifests labelled " + LabelFleet + "=" + f.id + " are owned by this ConfigMap; deleting it (podstep fleet cleanup) lets the garbage collector remove them",
	}}
	got, err := kube.Create(ctx, f.c.API, kube.ConfigMaps, f.o.Namespace, p)
	if err := f.c.classify(err, "create", "configmaps", f.o.Namespace); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %q does not exist: create it (kubectl apply -f deploy/fleet.yaml) or give --namespace", f.o.Namespace)
		}
		return err
	}
	f.parent = got
	return nil
}

// nodeReady is the node's Ready condition ("" when it has none).
func nodeReady(n *corev1.Node) (corev1.ConditionStatus, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

// configz reads the node's kubelet configuration through the API server
// (cluster.ReadConfigz, as run --pod does).
func (f *fleet) configz(ctx context.Context, node string) (*cluster.NodeConfig, error) {
	return cluster.ReadConfigz(ctx, f.c.API, node, func(err error) error {
		return f.c.classify(err, "get", "nodes/proxy", "")
	})
}

func (f *fleet) warnOnce(key, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.warned[key] {
		return
	}
	f.warned[key] = true
	fmt.Fprintln(f.o.Progress, "warning: "+msg)
}

// warnKubeletRuntime warns once, before any runner, when some nodes
// replay on their kubelet's own runtime (no -r, no replay annotation).
func (f *fleet) warnKubeletRuntime(nodes []selected) {
	if f.o.Endpoint != "" || f.o.Shadow != session.ShadowNever && f.o.Shadow != "" {
		return // -r, or the runners replay on shadows of the kubelets' runtimes
	}
	var names []string
	for _, n := range nodes {
		if n.obj == nil {
			continue
		}
		if _, ok := n.obj.Annotations[AnnotationReplayEndpoint]; !ok {
			names = append(names, Clean(n.name))
		}
	}
	if len(names) == 0 {
		return
	}
	which := strings.Join(names, ", ")
	if len(names) > 5 {
		which = strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	f.warnOnce("kubelet-runtime", fmt.Sprintf("%d node(s) replay on their kubelet's own runtime (%s): the kubelet's housekeeping "+
		"(HandlePodCleanups, pkg/kubelet/kubelet_pods.go) stops every sandbox of a pod it does not know, podstep's replay "+
		"included, so a run there may fail (\"stopped from outside\"); drop --shadow=never (each runner then replays on a shadow "+
		"of its node's runtime), or give a node a runtime no kubelet watches with the node annotation %s=unix:///PATH (docs/fleet.md)", len(names), which, AnnotationReplayEndpoint))
}

// runNode runs one node's runner to its end and fills r.
func (f *fleet) runNode(ctx, bg context.Context, r *Result, node *corev1.Node) {
	start := time.Now()
	defer func() { r.WallMs = float64(time.Since(start).Microseconds()) / 1000 }()
	r.Kubelet = Clean(node.Status.NodeInfo.KubeletVersion)
	r.Runtime = Clean(node.Status.NodeInfo.ContainerRuntimeVersion)
	run := &Runner{Fleet: f.id, Parent: f.parent, Namespace: f.o.Namespace, Node: node, Pod: f.o.Pod, ConfigMaps: f.o.ConfigMaps,
		Image: f.o.Image, PullPolicy: f.o.PullPolicy, ServiceAccount: f.o.ServiceAccount, HostDir: f.o.HostDir,
		Endpoint: f.o.Endpoint, Shadow: f.o.Shadow, RunArgs: f.o.RunArgs, APIServer: f.o.APIServer}
	replay, err := ReplayEndpoint(node)
	if err != nil {
		f.fail(ctx, r, err)
		return
	}
	run.ReplayEndpoint = replay
	if st, _ := nodeReady(node); st == corev1.ConditionTrue {
		cfg, err := f.configz(ctx, node.Name)
		var ae *AccessError
		switch {
		case errors.As(err, &ae):
			f.warnOnce("configz-denied", ae.Error()+": each node's runtime endpoint and kubelet settings are the defaults")
		case err != nil:
			f.warnOnce("configz-"+node.Name, fmt.Sprintf("node %s: its kubelet's configz: %v: using the defaults", Clean(node.Name), err))
		}
		run.Config = cfg
	}
	r.Endpoint, r.EndpointFrom = run.endpoint()
	cm, err := run.Manifest()
	if err == nil {
		_, err = kube.Create(ctx, f.c.API, kube.ConfigMaps, f.o.Namespace, cm)
		err = f.c.classify(err, "create", "configmaps", f.o.Namespace)
	}
	if err != nil {
		f.fail(ctx, r, err)
		return
	}
	pod := run.RunnerPod(cm)
	_, err = kube.Create(ctx, f.c.API, kube.Pods, f.o.Namespace, pod)
	if err := f.c.classify(err, "create", "pods", f.o.Namespace); err != nil {
		f.fail(ctx, r, err)
		f.deleteObjects(bg, pod.Name, false, -1)
		return
	}
	// Wait for the runner to start.
	p, why := f.waitStarted(ctx, pod.Name, node)
	if now, _ := f.hub.get(pod.Name); (p == nil || why != "") && (now == nil || !started(now)) {
		// It never ran: nothing to tear down, and a node without a kubelet
		// would never confirm a graceful deletion.
		f.deleteObjects(bg, pod.Name, true, 0)
	} else {
		defer f.deleteObjects(bg, pod.Name, true, -1)
	}
	switch {
	case ctx.Err() != nil:
		r.Status, r.ExitCode = Interrupted, exitInterrupted
		return
	case p == nil:
		r.Status, r.Error, r.ExitCode = NotStarted, why, exitRuntime
		return
	case why != "":
		r.Status, r.Error, r.ExitCode = Unschedulable, why, exitRuntime
		return
	}
	fmt.Fprintf(f.o.Progress, "%s: runner started in %s\n", Clean(node.Name), render.Duration(time.Since(start)))

	// Stream its log until it ends.
	rctx, cancel := context.WithTimeout(ctx, f.o.RunTimeout)
	defer cancel()
	if err := f.stream(rctx, pod.Name, r); err != nil && ctx.Err() == nil {
		r.LastLog = append(r.LastLog, "podstep fleet: reading the runner's log: "+Clean(err.Error()))
	}
	if ctx.Err() != nil {
		r.Status, r.ExitCode = Interrupted, exitInterrupted
		return
	}
	code, reason, ok := f.waitTerminated(ctx, pod.Name, 15*time.Second)
	switch {
	case r.Summary != nil:
		r.Status, r.ExitCode = Ran, r.Summary.ExitCode
		if ok {
			r.ExitCode = code
		}
	case rctx.Err() != nil:
		r.Status, r.ExitCode = Crashed, exitRuntime
		r.Error = fmt.Sprintf("the runner did not end within %s", f.o.RunTimeout)
	default:
		r.Status, r.ExitCode = Crashed, exitRuntime
		if ok {
			r.Error = fmt.Sprintf("the runner exited with code %d (%s) and printed no summary", code, Clean(reason))
		} else {
			r.Error = "the runner's log ended without a summary"
		}
	}
	r.StoppedFromOutside = StoppedFromOutside(r)
	if f.o.Record != "" && len(r.Steps) > 0 {
		if file, err := writeRecording(f.o.Record, r, cm.Data[podFile], cm.Data[nodeFile]); err != nil {
			r.LastLog = append(r.LastLog, "podstep fleet: --record: "+Clean(err.Error()))
		} else {
			r.Recording = file
		}
	}
}

func (f *fleet) fail(ctx context.Context, r *Result, err error) {
	if ctx.Err() != nil {
		r.Status, r.ExitCode = Interrupted, exitInterrupted
		return
	}
	r.Status, r.Error, r.ExitCode = Failed, Clean(err.Error()), exitRuntime
	var ae *AccessError
	if errors.As(err, &ae) {
		f.warnOnce("access-"+ae.Verb+ae.Resource, ae.Error())
	}
}

// waitStarted waits until the runner's container runs (or ran). It
// returns the pod, or nil and why it did not start in time; a pod and a
// reason is a runner the kubelet refused (it never ran).
func (f *fleet) waitStarted(ctx context.Context, name string, node *corev1.Node) (*corev1.Pod, string) {
	timer := time.NewTimer(f.o.Timeout)
	defer timer.Stop()
	for {
		p, changed := f.hub.get(name)
		if p != nil {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil || cs.State.Terminated != nil {
					return p, ""
				}
			}
			if p.Status.Phase == corev1.PodFailed {
				return p, fmt.Sprintf("the kubelet refused the runner: %s: %s", Clean(p.Status.Reason), Clean(p.Status.Message))
			}
			if why := cannotStart(p, f.o.HostDir); why != "" {
				return nil, why
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ""
		case <-timer.C:
			return nil, notStartedWhy(f.o.Timeout, p, node)
		}
	}
}

// cannotStart says why a runner whose container waits for a reason that
// no retry clears will never start ("" while it may): the kubelet retries
// CreateContainer on every sync (SyncPod, pkg/kubelet/kuberuntime/
// kuberuntime_manager.go) and the runtime refuses it the same way each
// time, so waiting out --timeout would only hide it. CreateContainerError
// counts, but not the two texts of it that do clear: a runtime call past
// its deadline, and a name still reserved by an earlier call that has not
// ended (the kubelet's next try succeeds).
func cannotStart(p *corev1.Pod, hostDir string) string {
	for _, cs := range p.Status.ContainerStatuses {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case "CreateContainerError":
			if strings.Contains(w.Message, "deadline exceeded") || strings.Contains(w.Message, "is reserved") {
				continue
			}
		case "CreateContainerConfigError", "InvalidImageName", "ErrImageNeverPull":
		default:
			continue
		}
		why := "the runner cannot start: " + Clean(w.Reason)
		if w.Message != "" {
			why += ": " + Clean(firstLine(w.Message, 400))
		}
		switch {
		case strings.Contains(w.Message, "not a shared mount"):
			why += fmt.Sprintf(" (the host dir must be on a shared mount: on the node, mount --bind %[1]s %[1]s && mount --make-shared %[1]s; or --host-dir on one: docs/fleet.md)", hostDir)
		case w.Reason == "ErrImageNeverPull" || w.Reason == "InvalidImageName":
			why += " (--image names the runner image; --image-pull-policy Never needs it on every node: docs/fleet.md)"
		}
		return why
	}
	return ""
}

// notStartedWhy says what kept a runner from starting.
func notStartedWhy(timeout time.Duration, p *corev1.Pod, node *corev1.Node) string {
	var parts []string
	if st, reason := nodeReady(node); st != corev1.ConditionTrue {
		s := "the node is not Ready"
		if st == "" {
			s = "the node has no Ready condition (no kubelet has ever reported for it)"
		} else if reason != "" {
			s += " (" + Clean(reason) + ")"
		}
		parts = append(parts, s)
	}
	if p != nil {
		s := "runner pod " + string(p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				s += ": " + Clean(w.Reason)
				if w.Message != "" {
					s += ": " + Clean(firstLine(w.Message, 400))
				}
			}
		}
		parts = append(parts, s)
	}
	msg := fmt.Sprintf("no runner started within %s", timeout)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	return msg
}

// waitTerminated waits for the runner's container to have terminated.
func (f *fleet) waitTerminated(ctx context.Context, name string, d time.Duration) (int, string, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		p, changed := f.hub.get(name)
		if p != nil {
			for _, cs := range p.Status.ContainerStatuses {
				if t := cs.State.Terminated; t != nil {
					return int(t.ExitCode), t.Reason, true
				}
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, "", false
		case <-timer.C:
			return 0, "", false
		}
	}
}

// stream follows the runner's log, parsing each line.
func (f *fleet) stream(ctx context.Context, name string, r *Result) error {
	rc, err := f.c.API.Logs(ctx, f.o.Namespace, name, &corev1.PodLogOptions{Container: "podstep", Follow: true})
	if err != nil {
		return f.c.classify(err, "get", "pods/log", f.o.Namespace)
	}
	defer rc.Close()
	return Parse(rc, r)
}

// progress prints one line for a node's result.
func (f *fleet) progress(r *Result) {
	f.mu.Lock()
	f.done++
	n := f.done
	f.mu.Unlock()
	line := fmt.Sprintf("[%d/%d] %s: %s", n, f.total, Clean(r.Node), r.Outcome())
	if fl := r.Failure(); fl != nil {
		line += fmt.Sprintf(" at %s/%s: %s", fl.Stage, Clean(fl.Step), Clean(fl.Reason))
	} else if r.Error != "" {
		line += ": " + Clean(firstLine(r.Error, 160))
	}
	if r.StoppedFromOutside != "" {
		line += "; " + StoppedHint
	}
	if r.Runtime != "" {
		line += " (" + r.Runtime + ")"
	}
	if r.Endpoint != "" {
		line += " on " + Clean(r.Endpoint) + " (" + r.EndpointFrom + ")"
	}
	line += " in " + render.Ms(r.WallMs)
	fmt.Fprintln(f.o.Progress, line)
}

// deleteObjects deletes a node's runner pod and manifest ConfigMap. A
// runner still running gets SIGTERM and its grace period: `podstep run`
// tears the replayed pod down before it exits.
// grace is the pod's deletion grace period in seconds (-1: its own).
func (f *fleet) deleteObjects(ctx context.Context, name string, pod bool, grace int64) {
	if pod {
		opts := metav1.DeleteOptions{}
		if grace >= 0 {
			opts.GracePeriodSeconds = &grace
		}
		err := f.c.API.Delete(ctx, kube.Pods, f.o.Namespace, name, opts)
		if err == nil {
			f.mu.Lock()
			f.deleted.Pods++
			f.mu.Unlock()
		}
	}
	if err := f.c.API.Delete(ctx, kube.ConfigMaps, f.o.Namespace, name, metav1.DeleteOptions{}); err == nil {
		f.mu.Lock()
		f.deleted.ConfigMaps++
		f.mu.Unlock()
	}
}

// cleanup deletes whatever of the fleet is left, waits for the runner
// pods to be gone (their teardown), then deletes the parent.
func (f *fleet) cleanup(ctx context.Context) Deleted {
	sel := LabelFleet + "=" + f.id
	pods, err := kube.List[corev1.PodList](ctx, f.c.API, kube.Pods, f.o.Namespace, metav1.ListOptions{LabelSelector: sel})
	if err == nil {
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue // being deleted already
			}
			grace := int64(-1)
			if !started(&p) {
				grace = 0
			}
			f.deleteObjects(ctx, p.Name, true, grace)
		}
	}
	// Wait for every runner pod to be gone.
	for {
		n, changed := f.hub.live()
		if n == 0 {
			break
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		}
		f.deleted.Left = n
		break
	}
	if err := f.c.API.Delete(ctx, kube.ConfigMaps, f.o.Namespace, f.parent.Name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}); err == nil {
		f.deleted.Parents++
	}
	return f.deleted
}

func ptr[T any](v T) *T { return &v }

// hub keeps the latest state of the fleet's runner pods from one watch.
type hub struct {
	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	changed chan struct{} // closed and replaced on every change
}

func newHub() *hub { return &hub{pods: map[string]*corev1.Pod{}, changed: make(chan struct{})} }

// get returns a pod's latest state (nil: not seen or gone) and a channel
// closed at the next change of any pod.
func (h *hub) get(name string) (*corev1.Pod, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pods[name], h.changed
}

// live counts the pods not yet deleted.
func (h *hub) live() (int, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pods), h.changed
}

func (h *hub) set(p *corev1.Pod, gone bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gone {
		delete(h.pods, p.Name)
	} else {
		h.pods[p.Name] = p
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// run watches the pods matching sel until ctx ends, watching again from
// the last resourceVersion when the server closes the watch.
func (h *hub) run(ctx context.Context, c *Client, ns, sel string) {
	rv := ""
	for ctx.Err() == nil {
		w, err := c.API.Watch(ctx, kube.Pods, ns, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				if ev.Type == watch.Error {
					rv = "" // expired: start again
				}
				continue
			}
			rv = p.ResourceVersion
			switch ev.Type {
			case watch.Added, watch.Modified:
				h.set(p, false)
			case watch.Deleted:
				h.set(p, true)
			}
		}
		w.Stop()
	}
}

// started says whether a runner's container ever ran.
func started(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}
