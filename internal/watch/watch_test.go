package watch

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/steps"
)

// proxied is the set-up every test here shares: a simulated runtime (a
// real CRI gRPC server) behind a podstep proxy with the given hooks, and a
// CRI client playing the kubelet through the proxy; all of it stops when
// the test ends.
type proxied struct {
	ep       string        // the proxy's endpoint
	upstream string        // the runtime's, behind it
	srv      *proxy.Server // the proxy (Session.Close may stop it earlier)
	client   *cri.Client   // the kubelet's client, through the proxy
}

func startProxied(t *testing.T, hooks proxy.Hooks) *proxied {
	t.Helper()
	// Not t.TempDir: a unix socket's path must stay short.
	dir, err := os.MkdirTemp("", "pxw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	rt, err := sim.StartWithOptions(dir, sim.Options{Dirs: []string{os.TempDir()}}) // its requests name log dirs in /tmp
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Stop)
	ps, err := proxy.New(rt.Endpoint(), hooks)
	if err != nil {
		t.Fatal(err)
	}
	px := &proxied{ep: "unix://" + filepath.Join(dir, "p.sock"), upstream: rt.Endpoint(), srv: ps}
	l, err := proxy.Listen(px.ep)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ps.Serve(l) }() // nil once stopped; a failure shows as failed calls
	t.Cleanup(ps.Stop)
	if px.client, err = cri.Dial(px.ep, "", cri.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.client.Close() })
	return px
}

// rig is a watcher fed by a proxy (startProxied) and the events of every
// pod it follows.
type rig struct {
	*proxied
	w      *Watcher
	mu     sync.Mutex
	events []steps.Event
}

func newRig(t *testing.T, o Options) *rig {
	t.Helper()
	r := &rig{}
	on := o.OnPod
	o.OnPod = func(p *Pod) {
		p.Subscribe(func(ev steps.Event) { r.mu.Lock(); r.events = append(r.events, ev); r.mu.Unlock() })
		if on != nil {
			on(p)
		}
	}
	o.Quiet = 30 * time.Millisecond
	r.w = New(o)
	t.Cleanup(r.w.Close)
	r.proxied = startProxied(t, r.w.Hooks())
	return r
}

// settle waits for multi-call steps to close.
func (r *rig) settle() { time.Sleep(120 * time.Millisecond) }

func sandboxConfig(name, uid string) *runtimeapi.PodSandboxConfig {
	labels := map[string]string{"app": name, labelPodName: name, labelPodNamespace: "default", labelPodUID: uid}
	return &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		Hostname: name, LogDirectory: "/tmp/podstep-watch-test/" + uid, Labels: labels}
}

func containerConfig(pod *runtimeapi.PodSandboxConfig, name string, cmd ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:   &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35", UserSpecifiedImage: "docker.io/library/busybox:1.35"},
		Command: cmd, LogPath: name + "/0.log",
		Labels: map[string]string{labelContainerName: name, labelPodName: pod.Metadata.Name, labelPodNamespace: "default", labelPodUID: pod.Metadata.Uid}}
}

// kubelet plays the calls a kubelet v1.37 makes for a pod (the order of
// the reference traces in testdata/kubelet-traces): node polling, the
// sandbox and its IP, per container the image checks, create, start (and
// a postStart exec hook), the pod-filtered relist, then the teardown.
type kubelet struct {
	t   *testing.T
	c   *cri.Client
	cfg *runtimeapi.PodSandboxConfig
	sb  string
	ids map[string]string
}

// newKubelet plays pod cfg's calls through client c.
func newKubelet(t *testing.T, c *cri.Client, cfg *runtimeapi.PodSandboxConfig) *kubelet {
	return &kubelet{t: t, c: c, cfg: cfg, ids: map[string]string{}}
}

func (k *kubelet) must(err error) {
	k.t.Helper()
	if err != nil {
		k.t.Fatal(err)
	}
}

func (k *kubelet) sandbox(ctx context.Context) {
	r, err := k.c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: k.cfg})
	k.must(err)
	k.sb = r.PodSandboxId
	_, err = k.c.PodSandboxStatus(ctx, k.sb)
	k.must(err)
}

func (k *kubelet) container(ctx context.Context, name string, hook []string, cmd ...string) {
	img := &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}
	for range 2 {
		_, err := k.c.ImageStatus(ctx, img)
		k.must(err)
	}
	r, err := k.c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: k.sb, Config: containerConfig(k.cfg, name, cmd...), SandboxConfig: k.cfg})
	k.must(err)
	k.ids[name] = r.ContainerId
	_, err = k.c.StartContainer(ctx, r.ContainerId)
	k.must(err)
	if hook != nil {
		_, err = k.c.ExecSync(ctx, r.ContainerId, hook, 0)
		k.must(err)
	}
}

func (k *kubelet) relist(ctx context.Context) {
	sel := map[string]string{labelPodUID: k.cfg.Metadata.Uid}
	_, err := k.c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	k.must(err)
	_, err = k.c.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	k.must(err)
	_, err = k.c.PodSandboxStatus(ctx, k.sb)
	k.must(err)
	for _, id := range k.ids {
		_, err = k.c.ContainerStatus(ctx, id)
		k.must(err)
	}
}

func (k *kubelet) teardown(ctx context.Context) {
	for _, id := range k.ids {
		_, err := k.c.StopContainer(ctx, id, 0)
		k.must(err)
	}
	_, err := k.c.StopPodSandbox(ctx, k.sb)
	k.must(err)
	for _, id := range k.ids {
		_, err := k.c.RemoveContainer(ctx, id)
		k.must(err)
	}
	_, err = k.c.RemovePodSandbox(ctx, k.sb)
	k.must(err)
}

func names(ss []steps.Step) []string {
	var out []string
	for _, s := range ss {
		out = append(out, string(s.Stage)+" "+s.Name)
	}
	return out
}

// TestAttribution: the calls of a kubelet-shaped pod creation become
// podstep's steps, with their stages; node-level calls are only counted;
// other pods' calls do not show; the event stream is a steps.Engine's.
func TestAttribution(t *testing.T) {
	for _, tc := range []struct {
		name  string
		play  func(ctx context.Context, k *kubelet)
		want  []string
		state string // the pod's STATUS at the end, before the teardown
	}{
		{"hello", func(ctx context.Context, k *kubelet) {
			k.sandbox(ctx)
			k.container(ctx, "app", nil, "sleep", "3600")
			k.relist(ctx)
		}, []string{"sandbox run-sandbox", "sandbox sandbox-status", "containers pull/app", "containers create/app", "containers start/app", "containers relist"}, "Running"},
		{"postStart", func(ctx context.Context, k *kubelet) {
			k.sandbox(ctx)
			k.container(ctx, "app", []string{"sh", "-c", "echo hooked"}, "sleep", "3600")
			k.relist(ctx)
		}, []string{"sandbox run-sandbox", "sandbox sandbox-status", "containers pull/app", "containers create/app", "containers start/app", "post-start post-start/app", "containers relist"}, "Running"},
		{"init", func(ctx context.Context, k *kubelet) {
			k.sandbox(ctx)
			k.container(ctx, "setup", nil, "true")
			k.relist(ctx)
			// The init container exits; the next relist sees it.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				st, err := k.c.ContainerStatus(ctx, k.ids["setup"])
				k.must(err)
				if st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			k.relist(ctx)
			k.container(ctx, "app", nil, "sleep", "3600")
			k.relist(ctx)
		}, []string{"sandbox run-sandbox", "sandbox sandbox-status", "init pull/setup", "init create/setup", "init start/setup", "init relist",
			"init relist", "containers pull/app", "containers create/app", "containers start/app", "containers relist"}, "Running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Options{Follow: "default/" + tc.name})
			ctx := context.Background()
			k := newKubelet(t, r.client, sandboxConfig(tc.name, "uid-"+tc.name))
			other := newKubelet(t, r.client, sandboxConfig("other", "uid-other"))
			_, err := r.client.Version(ctx)
			k.must(err)
			other.sandbox(ctx)
			tc.play(ctx, k)
			_, err = r.client.ListContainers(ctx, nil)
			k.must(err)
			r.settle()
			pods := r.w.Pods()
			if len(pods) != 1 || pods[0].Key() != "default/"+tc.name {
				t.Fatalf("followed pods %v, want only default/%s", pods, tc.name)
			}
			p := pods[0]
			if got := names(p.Steps()); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("steps\n got %q\nwant %q", got, tc.want)
			}
			if got := p.PodState().Display; got != tc.state {
				t.Errorf("STATUS %q, want %q", got, tc.state)
			}
			poll := r.w.Polling()
			if poll["Version"] != 1 || poll["ListContainers"] < 1 {
				t.Errorf("polling %v: want Version ×1 and the unfiltered ListContainers", poll)
			}
			if poll[OtherPods] != 2 {
				t.Errorf("polling %v: the other pod's RunPodSandbox and PodSandboxStatus are counted, not shown", poll)
			}
			k.teardown(ctx)
			r.settle()
			select {
			case <-p.Removed():
			default:
				t.Error("RemovePodSandbox did not mark the pod removed")
			}
			all := names(p.Steps())
			tail := all[len(all)-4:]
			if want := []string{"teardown stop-containers", "teardown stop-sandbox", "teardown remove-containers", "teardown remove-sandbox"}; !reflect.DeepEqual(tail, want) {
				t.Errorf("teardown steps %q, want %q", tail, want)
			}
			// Each step: started, its calls sent and done, then done, in order.
			r.mu.Lock()
			defer r.mu.Unlock()
			open := 0
			for _, ev := range r.events {
				switch ev.Kind {
				case steps.StepStarted:
					if open != 0 {
						t.Fatalf("step %s started while step %d ran", ev.Step.Name, open)
					}
					open = ev.Step.ID
				case steps.StepDone:
					if ev.Step.ID != open || ev.Pod == nil {
						t.Fatalf("step %d done while %d ran (pod %v)", ev.Step.ID, open, ev.Pod)
					}
					open = 0
				}
			}
			if sum := p.Summary(); sum.Outcome != "removed" || sum.Timing.Calls == 0 {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}

// TestPullSecretsMasked: a PullImage's registry password never shows in
// a step, its JSON or its events.
func TestPullSecretsMasked(t *testing.T) {
	const pw = "s3cret-Podstep-Registry-Pw"
	r := newRig(t, Options{})
	ctx := context.Background()
	k := newKubelet(t, r.client, sandboxConfig("pull", "uid-pull"))
	k.sandbox(ctx)
	if _, err := r.client.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "127.0.0.1:5055/podstep/private-busybox:1.0"},
		Auth: &runtimeapi.AuthConfig{Username: "podstep", Password: pw}, SandboxConfig: k.cfg}); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	r.settle()
	var b strings.Builder
	pr := report.New(&b, report.JSON)
	p := r.w.Pods()[0]
	var sb report.StepBuilder
	found := false
	for _, s := range p.Steps() {
		pr.Step(sb.Step(steps.Event{Kind: steps.StepDone, Step: s}))
		for _, c := range s.Calls {
			found = found || c.Method == "PullImage"
		}
	}
	if !found {
		t.Fatalf("no PullImage call in the pod's steps: %q", names(p.Steps()))
	}
	if strings.Contains(b.String(), pw) {
		t.Errorf("the registry password shows:\n%s", b.String())
	}
	if !strings.Contains(b.String(), `"username":"podstep"`) {
		t.Errorf("the pull's request is not there:\n%s", b.String())
	}
}

// TestReadsDuringStart: the kubelet's status reads (another goroutine:
// the PLEG) while StartContainer is under way do not cut the start step:
// it keeps its call, and the reads are a relist of their own.
func TestReadsDuringStart(t *testing.T) {
	r := newRig(t, Options{})
	ctx := context.Background()
	cfg := sandboxConfig("slow", "uid-slow")
	cfg.Annotations = map[string]string{"sim.podstep.dev/delay.StartContainer": "300ms"}
	k := newKubelet(t, r.client, cfg)
	k.sandbox(ctx)
	img := &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}
	_, err := k.c.ImageStatus(ctx, img)
	k.must(err)
	cr, err := k.c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: k.sb, Config: containerConfig(cfg, "app", "sleep", "9"), SandboxConfig: cfg})
	k.must(err)
	k.ids["app"] = cr.ContainerId
	done := make(chan error, 1)
	go func() { _, err := k.c.StartContainer(ctx, cr.ContainerId); done <- err }()
	time.Sleep(100 * time.Millisecond)
	k.relist(ctx) // while StartContainer runs
	k.must(<-done)
	r.settle()
	p := r.w.Pods()[0]
	var start *steps.Step
	for _, s := range p.Steps() {
		if s.Name == "start/app" {
			s := s
			start = &s
		}
	}
	if start == nil || len(start.Calls) != 1 || start.Calls[0].Method != "StartContainer" || start.Duration < 250*time.Millisecond {
		t.Fatalf("start/app %+v: want its StartContainer call and its 300 ms\nsteps %q", start, names(p.Steps()))
	}
	for i, s := range p.Steps() {
		if s.ID != i+1 {
			t.Errorf("step %d has ID %d: steps are numbered in the order they finish", i+1, s.ID)
		}
	}
}

// TestTwoPodsAtOnce: two pods created at the same time (two pod workers);
// each image check goes to the pod whose annotations it carries.
func TestTwoPodsAtOnce(t *testing.T) {
	r := newRig(t, Options{})
	ctx := context.Background()
	ks := map[string]*kubelet{}
	for _, n := range []string{"a", "b"} {
		cfg := sandboxConfig(n, "uid-"+n)
		cfg.Annotations = map[string]string{"kubernetes.io/config.hash": "uid-" + n, "kubernetes.io/config.source": "file"}
		ks[n] = newKubelet(t, r.client, cfg)
		ks[n].sandbox(ctx)
	}
	for _, n := range []string{"a", "b"} {
		_, err := r.client.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35", Annotations: ks[n].cfg.Annotations})
		ks[n].must(err)
	}
	for _, n := range []string{"a", "b"} {
		k := ks[n]
		_, err := r.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: k.sb, Config: containerConfig(k.cfg, "c"+n, "sleep", "9"), SandboxConfig: k.cfg})
		k.must(err)
	}
	r.settle()
	for _, p := range r.w.Pods() {
		n := strings.TrimPrefix(p.Name, "")
		want := []string{"sandbox run-sandbox", "sandbox sandbox-status", "containers pull/c" + n, "containers create/c" + n}
		if got := names(p.Steps()); !reflect.DeepEqual(got, want) {
			t.Errorf("pod %s: steps %q, want %q", p.Name, got, want)
		}
	}
}

func runReq(k *kubelet) *runtimeapi.RunPodSandboxRequest {
	return &runtimeapi.RunPodSandboxRequest{Config: k.cfg}
}

// TestKubeletFailureExplained: a StartContainer the runtime refuses (in
// containerd 2.4's words, as the harness answered for a missing command)
// is a failed step of the kubelet's pod carrying its explanation, and the
// pod's summary names it.
func TestKubeletFailureExplained(t *testing.T) {
	const msg = `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: "/no/such/binary": stat /no/such/binary: no such file or directory`
	r := newRig(t, Options{})
	ctx := context.Background()
	cfg := sandboxConfig("noexec", "uid-noexec")
	cfg.Annotations = map[string]string{sim.AnnotationStartError + "app": msg}
	k := newKubelet(t, r.client, cfg)
	k.sandbox(ctx)
	img := &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}
	if _, err := r.client.ImageStatus(ctx, img); err != nil {
		t.Fatal(err)
	}
	cr, err := r.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: k.sb, Config: containerConfig(cfg, "app", "/no/such/binary"), SandboxConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.StartContainer(ctx, cr.ContainerId); err == nil {
		t.Fatal("StartContainer went through: the fault annotation did not reach the simulator")
	}
	r.settle()
	p := r.w.Pods()[0]
	var failed *steps.Step
	for _, s := range p.Steps() {
		if s.State == steps.Failed {
			failed = &s
		}
	}
	if failed == nil {
		t.Fatalf("no failed step: %q", names(p.Steps()))
	}
	if x := failed.Result.Explanation; x == nil || x.ID != "executable-not-found" {
		t.Fatalf("step %s (%s: %s): explanation %+v, want executable-not-found", failed.Name, failed.Result.Reason, failed.Result.Message, x)
	}
	if !strings.Contains(strings.Join(failed.Result.Explanation.Confirm, "\n"), "noexec") {
		t.Errorf("the commands do not name the pod: %q", failed.Result.Explanation.Confirm)
	}
}
