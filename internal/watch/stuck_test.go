package watch

import (
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/steps"
)

// clockRig drives a watcher's hooks by hand on a clock the test moves:
// no proxy, no runtime; each call is its request's bytes and, at done,
// its answer's.
type clockRig struct {
	t     *testing.T
	w     *Watcher
	mu    sync.Mutex
	now   time.Time
	seq   uint64
	notes []StuckNote
	evs   []steps.Event
}

func newClockRig(t *testing.T) *clockRig {
	r := &clockRig{t: t, now: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)}
	r.w = New(Options{Now: r.clock, Quiet: time.Hour, OnStuck: func(_ *Pod, n StuckNote) {
		r.mu.Lock()
		r.notes = append(r.notes, n)
		r.mu.Unlock()
	}, OnPod: func(p *Pod) {
		p.Subscribe(func(ev steps.Event) { r.mu.Lock(); r.evs = append(r.evs, ev); r.mu.Unlock() })
	}})
	t.Cleanup(r.w.Close)
	return r
}

func (r *clockRig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

// at moves the clock to start+d and lets the watcher look.
func (r *clockRig) at(d time.Duration) []StuckNote {
	r.mu.Lock()
	r.now = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC).Add(d)
	r.notes = nil
	r.mu.Unlock()
	r.w.mu.Lock()
	r.w.checkStuck()
	r.w.mu.Unlock()
	r.w.deliver()
	return r.take()
}

func (r *clockRig) take() []StuckNote {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.notes
	r.notes = nil
	return n
}

// send is the kubelet sending a call now, with the deadline it carries
// (zero: none).
func (r *clockRig) send(method string, req proto.Message, deadline time.Time) *proxy.Call {
	b, err := proto.Marshal(req)
	if err != nil {
		r.t.Fatal(err)
	}
	r.seq++
	svc := "runtime.v1.RuntimeService"
	if strings.Contains(method, "Image") {
		svc = "runtime.v1.ImageService"
	}
	c := &proxy.Call{Seq: r.seq, Method: "/" + svc + "/" + method, Request: b, Arrived: r.clock(), Start: r.clock(), Deadline: deadline}
	r.w.arrived(c)
	return c
}

// answer is the runtime's answer to c now: resp, or err.
func (r *clockRig) answer(c *proxy.Call, resp proto.Message, err error) []StuckNote {
	c.Duration = r.clock().Sub(c.Start)
	c.Err = err
	if resp != nil {
		b, e := proto.Marshal(resp)
		if e != nil {
			r.t.Fatal(e)
		}
		c.Response = b
	}
	r.mu.Lock()
	r.notes = nil
	r.mu.Unlock()
	r.w.done(c)
	return r.take()
}

func lines(ns []StuckNote) string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Line())
	}
	return strings.Join(out, "\n")
}

// TestStuckHungSandbox: a RunPodSandbox the runtime never answers is said
// at 0.5 s with its age and the kubelet's 4-minute deadline, again as it
// ages (one line for several ages crossed at once), given up on at 4 m;
// the retry with the same name is shown with the call it collides with,
// as try 2 with the first one's failure, and its "name is reserved" step
// names the earlier call as the cause.
func TestStuckHungSandbox(t *testing.T) {
	r := newClockRig(t)
	cfg := sandboxConfig("web", "uid-web")
	first := r.send("RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: cfg}, time.Time{})
	if n := r.at(400 * time.Millisecond); len(n) != 0 {
		t.Fatalf("at 0.4s: %s, want nothing yet", lines(n))
	}
	n := r.at(500 * time.Millisecond)
	if len(n) != 1 || n[0].Event != "slow" || n[0].Call.Method != "RunPodSandbox" || n[0].Call.AgeMs != 500 {
		t.Fatalf("at 0.5s: %+v, want one slow note of RunPodSandbox, 500 ms", n)
	}
	c := n[0].Call
	if c.DeadlineMs != (4*time.Minute).Milliseconds() || c.DeadlineFrom != DeadlineKubelet || c.Name != "web_default_uid-web_0" {
		t.Errorf("deadline %d ms from %q, name %q: want 4m from the kubelet's rule, web_default_uid-web_0", c.DeadlineMs, c.DeadlineFrom, c.Name)
	}
	want := "stuck: default/web: RunPodSandbox #1 0.5s, no answer; the kubelet gives up at 4m0s (2 × runtimeRequestTimeout (remoteRuntimeService.RunPodSandbox))"
	if got := n[0].Line(); got != want {
		t.Errorf("line\n got %s\nwant %s", got, want)
	}
	if n := r.at(3*time.Minute + 12*time.Second); len(n) != 1 || !strings.Contains(n[0].Line(), "RunPodSandbox #1 3m12s, no answer; the kubelet gives up at 4m0s") {
		t.Errorf("at 3m12s: %s, want one line of the call at 3m12s", lines(n))
	}
	if n := r.at(3*time.Minute + 13*time.Second); len(n) != 0 {
		t.Errorf("at 3m13s: %s, want nothing new", lines(n))
	}
	if v := r.w.Pods()[0].Stuck(); len(v.Calls) != 1 || v.Calls[0].AgeMs != (3*time.Minute+13*time.Second).Milliseconds() || v.Calls[0].State != "open" {
		t.Errorf("view at 3m13s: %+v, want the call, open, 3m13s old", v.Calls)
	}
	shown := r.w.Pods()[0].Steps()
	if len(shown) != 1 || !strings.HasPrefix(shown[0].Title, "RunPodSandbox #1 3m13s, no answer; the kubelet gives up at 4m0s") ||
		len(shown[0].Requests) != 1 || shown[0].Requests[0].Note != "sent 3m13s ago, no answer yet" {
		t.Errorf("the TUI's steps at 3m13s: %+v, want the running step titled with the call in flight", shown)
	}
	r.at(4 * time.Minute)
	n = r.answer(first, nil, status.Error(codes.DeadlineExceeded, "context deadline exceeded"))
	if len(n) != 1 || n[0].Event != "gave-up" || !strings.Contains(n[0].Line(), "the kubelet gave up after 4m0s") || !strings.Contains(n[0].Line(), "name is reserved") {
		t.Fatalf("at the deadline: %s, want the kubelet giving up", lines(n))
	}
	if n := r.at(4*time.Minute + 10*time.Second); len(n) != 1 || n[0].Event != "waiting" || n[0].Waiting.Why != "sandbox-retry" {
		t.Errorf("between tries: %+v, want waiting for the sandbox's retry", n)
	}
	// The kubelet's retry: attempt 0 again (no sandbox was made), the same name.
	second := r.send("RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: cfg}, time.Time{})
	n = r.at(4*time.Minute + 10*time.Second + 500*time.Millisecond)
	var slow *InFlight
	for _, x := range n {
		if x.Event == "slow" {
			slow = x.Call
		}
	}
	if slow == nil || slow.Seq != second.Seq || slow.CollidesWith == nil || slow.CollidesWith.Seq != first.Seq || slow.CollidesWith.State != "gave-up" {
		t.Fatalf("the retry: %s, want it said with the call it collides with", lines(n))
	}
	if slow.Try != 2 || !strings.Contains(slow.Previous, "RunPodSandbox #1 failed") {
		t.Errorf("try %d, previous %q: want try 2 after #1's failure", slow.Try, slow.Previous)
	}
	if l := n[0].Line(); !strings.Contains(l, "the same name as RunPodSandbox #1 sent at 03:00:00, which the kubelet gave up on after 4m0s") {
		t.Errorf("line %s, want the earlier call named", l)
	}
	reserved := `failed to reserve sandbox name "web_default_uid-web_0": name "web_default_uid-web_0" is reserved for "4c1f"`
	r.answer(second, nil, status.Error(codes.Unknown, reserved))
	r.w.deliver()
	var failed *steps.Step
	r.mu.Lock()
	for _, ev := range r.evs {
		if ev.Kind == steps.StepDone && ev.Step.State == steps.Failed && len(ev.Step.Calls) == 1 && ev.Step.Calls[0].Seq == int(second.Seq) {
			s := ev.Step
			failed = &s
		}
	}
	r.mu.Unlock()
	if failed == nil {
		t.Fatal("no failed step for the retry")
	}
	if w := strings.Join(failed.Result.Warnings, "\n"); !strings.Contains(w, "RunPodSandbox reused the name of RunPodSandbox #1") || !strings.Contains(w, "which is the cause") {
		t.Errorf("the retry's warnings %q, want the earlier call named as the cause", w)
	}
}

// TestStuckDeadlines: the kubelet's deadline for each kind of call, as
// kubelet v1.37's CRI client sets it; the call's own deadline when it
// carries one.
func TestStuckDeadlines(t *testing.T) {
	for _, tc := range []struct {
		method string
		req    proto.Message
		want   time.Duration
		rule   string
	}{
		{"RunPodSandbox", &runtimeapi.RunPodSandboxRequest{}, 4 * time.Minute, "2 × runtimeRequestTimeout"},
		{"CreateContainer", &runtimeapi.CreateContainerRequest{}, 2 * time.Minute, "runtimeRequestTimeout (remoteRuntimeService.CreateContainer)"},
		{"StopContainer", &runtimeapi.StopContainerRequest{Timeout: 30}, 2*time.Minute + 30*time.Second, "the grace period 30s + runtimeRequestTimeout"},
		{"ExecSync", &runtimeapi.ExecSyncRequest{Timeout: 1}, 2*time.Minute + time.Second, "the command's timeout 1.0s"},
		{"ExecSync", &runtimeapi.ExecSyncRequest{}, 0, "none"},
		{"PullImage", &runtimeapi.PullImageRequest{}, 0, "none: the kubelet waits for a pull"},
	} {
		d, rule := kubeletDeadline(tc.method, tc.req, DefaultRequestTimeout)
		if d != tc.want || !strings.Contains(rule, tc.rule) {
			t.Errorf("%s: %s (%s), want %s (%s)", tc.method, d, rule, tc.want, tc.rule)
		}
	}
	r := newClockRig(t)
	dl := r.clock().Add(90 * time.Second)
	r.send("RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("a", "uid-a")}, dl)
	n := r.at(time.Second)
	if len(n) != 1 || n[0].Call.DeadlineFrom != DeadlineCall || n[0].Call.DeadlineMs != 90000 || !strings.Contains(n[0].Line(), "the call's own deadline") {
		t.Errorf("a call with a deadline: %s, want its own 90 s", lines(n))
	}
	if n := r.at(91 * time.Second); len(n) != 1 || n[0].Call.State != "past-deadline" || !strings.Contains(n[0].Line(), "past the kubelet's deadline: it gave up at 1m30s") {
		t.Errorf("past it: %s, want past-deadline", lines(n))
	}
}

// TestStuckPulls: a pod whose image is absent waits, with no call of its
// own, behind another pod's PullImage (the serialized puller); a pull that
// fails puts the image in back-off, 10 s doubling to 300 s.
func TestStuckPulls(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {5, 160 * time.Second}, {6, 300 * time.Second}, {12, 300 * time.Second}} {
		if got := PullBackOff(tc.n); got != tc.want {
			t.Errorf("PullBackOff(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
	r := newClockRig(t)
	a, b := sandboxConfig("a", "uid-a"), sandboxConfig("b", "uid-b")
	b.Annotations = map[string]string{"pod": "b"}
	pull := r.send("PullImage", &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "registry.test/big:1"}, SandboxConfig: a}, time.Time{})
	r.answer(r.send("RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: b}, time.Time{}), &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb-b"}, nil)
	st := r.send("ImageStatus", &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "registry.test/small:1", Annotations: b.Annotations}}, time.Time{})
	r.answer(st, &runtimeapi.ImageStatusResponse{}, nil)
	n := r.at(2 * time.Second)
	var wt *Waiting
	for _, x := range n {
		if x.Event == "waiting" && x.Pod == "default/b" {
			wt = x.Waiting
		}
	}
	if wt == nil || wt.Why != "image-pull-queue" || wt.Behind == nil || wt.Behind.Pod != "default/a" || wt.Behind.Seq != pull.Seq {
		t.Fatalf("b: %s, want waiting behind a's PullImage", lines(n))
	}
	if !strings.Contains(n[len(n)-1].Line(), "serialImagePuller") && !strings.Contains(lines(n), "serialImagePuller") {
		t.Errorf("the line does not name the kubelet's serialized puller: %s", lines(n))
	}
	// a's pull fails three times: back-off 40 s after the third.
	r.answer(pull, nil, status.Error(codes.NotFound, "failed to pull and unpack image: not found"))
	for i := range 2 {
		r.at(time.Duration(10+i*30) * time.Second)
		r.answer(r.send("PullImage", &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "registry.test/big:1"}, SandboxConfig: a}, time.Time{}),
			nil, status.Error(codes.NotFound, "failed to pull and unpack image: not found"))
	}
	var pa *Pod
	for _, p := range r.w.Pods() {
		if p.Name == "a" {
			pa = p
		}
	}
	v := pa.Stuck()
	if v.Waiting == nil || v.Waiting.Why != "pull-backoff" || v.Waiting.Failures != 3 || v.Waiting.BackOffMs != 40000 {
		t.Fatalf("a after 3 failures: %+v, want pull-backoff 40 s", v.Waiting)
	}
	if !strings.Contains(v.Waiting.Text, "ImagePullBackOff: 3 failed pull(s) of registry.test/big:1; the image manager pulls it again after 40s") {
		t.Errorf("text %q", v.Waiting.Text)
	}
	if n := r.at(41 * time.Second); !strings.Contains(lines(n), "waiting: default/a: ImagePullBackOff") {
		t.Errorf("in the back-off: %s, want a waiting", lines(n))
	}
	if n := r.at(40*time.Second + 41*time.Second); !strings.Contains(lines(n), "waiting: default/a: no longer") {
		t.Errorf("after the back-off: %s, want a's wait over", lines(n))
	}
}

// TestStuckContainerName: a CreateContainer retried with the same name
// and attempt after the kubelet gave up on the first is shown with it; a
// name whose call was answered, and one given up on longer than
// holdNames ago, hold nothing.
func TestStuckContainerName(t *testing.T) {
	for _, tc := range []struct {
		name     string
		firstErr error
		wait     time.Duration
		collides bool
	}{
		{"given up on", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), 10 * time.Second, true},
		{"answered with an error", status.Error(codes.Unknown, "failed to create containerd container: boom"), 10 * time.Second, false},
		{"given up on long ago", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), holdNames + time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newClockRig(t)
			cfg := sandboxConfig("web", "uid-web")
			r.answer(r.send("RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: cfg}, time.Time{}), &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb1"}, nil)
			create := func() *proxy.Call {
				return r.send("CreateContainer", &runtimeapi.CreateContainerRequest{PodSandboxId: "sb1", Config: containerConfig(cfg, "app"), SandboxConfig: cfg}, time.Time{})
			}
			first := create()
			r.at(2 * time.Minute)
			r.answer(first, nil, tc.firstErr)
			r.at(2*time.Minute + tc.wait)
			create()
			n := r.at(2*time.Minute + tc.wait + time.Second)
			if len(n) == 0 || n[0].Call == nil {
				t.Fatalf("no note of the second CreateContainer: %+v", n)
			}
			c := n[0].Call
			if c.Name != "app_0" || c.Deadline == nil || c.DeadlineMs != 120000 {
				t.Errorf("name %q deadline %d ms, want app_0 and 2 m", c.Name, c.DeadlineMs)
			}
			if got := c.CollidesWith != nil && c.CollidesWith.Seq == first.Seq; got != tc.collides {
				t.Errorf("collides with the first: %v (%+v), want %v", got, c.CollidesWith, tc.collides)
			}
		})
	}
}
