package watch

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
)

// TestPLEG: the kubelet's relists (unfiltered ListPodSandbox, then
// ListContainers, every second: GenericPLEG.Relist) are followed on a
// clock the test moves: a relist late by one more of 5 s, 30 s, 1 m, 2 m is
// said with the call it waits on; past 3 m PLEG is unhealthy (the node
// NotReady); a relist that goes through again is said; lists that are no
// kubelet's PLEG (filtered, or a single one as crictl's) say nothing.
func TestPLEG(t *testing.T) {
	type step struct {
		at   time.Duration
		do   string // "relist" (both answered), "hang" (ListPodSandbox answered, ListContainers left open), "answer" (the open one), "fail" (ListContainers fails), "filtered", "look"
		want string // the notes' lines, joined by "|"; "" none
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"runtime hangs, then answers", []step{
			{0, "relist", ""}, {time.Second, "relist", ""}, {2 * time.Second, "hang", ""},
			{5900 * time.Millisecond, "look", ""},
			{6 * time.Second, "look", "pleg: the kubelet's last relist was 5.0s ago (every 1s when the runtime answers; PLEG turns unhealthy at 3m0s: the node goes NotReady); waiting on ListContainers #6 4.0s, no answer"},
			{20 * time.Second, "look", ""},
			{31 * time.Second, "look", "pleg: the kubelet's last relist was 30s ago (every 1s when the runtime answers; PLEG turns unhealthy at 3m0s: the node goes NotReady); waiting on ListContainers #6 29s, no answer"},
			{3*time.Minute + time.Second, "look", "pleg: the kubelet's last relist was 3m0s ago: PLEG is not healthy (over 3m0s, GenericPLEG.Healthy): the node is NotReady and the kubelet syncs no pod until a relist goes through; waiting on ListContainers #6 2m59s, no answer"},
			{3*time.Minute + 2*time.Second, "answer", ""},
			{3*time.Minute + 3*time.Second, "relist", "pleg: the kubelet relisted again; its previous relist was 3m1s before"},
			{3*time.Minute + 9*time.Second, "look", "pleg: the kubelet's last relist was 6.0s ago (every 1s when the runtime answers; PLEG turns unhealthy at 3m0s: the node goes NotReady)"},
		}},
		// GetPods failed: the kubelet records no relist time.
		{"lists fail", []step{
			{0, "relist", ""}, {time.Second, "relist", ""}, {2 * time.Second, "fail", ""}, {3 * time.Second, "fail", ""},
			{6 * time.Second, "look", "pleg: the kubelet's last relist was 5.0s ago (every 1s when the runtime answers; PLEG turns unhealthy at 3m0s: the node goes NotReady)"},
		}},
		{"one list, as crictl's", []step{{0, "relist", ""}, {time.Minute, "look", ""}}},
		{"pod-filtered lists", []step{{0, "filtered", ""}, {time.Second, "filtered", ""}, {time.Minute, "look", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newClockRig(t)
			var lines []string
			r.w.opts.OnPLEG = func(n PLEGNote) { lines = append(lines, n.Line()) }
			var open *proxy.Call
			for _, s := range tc.steps {
				r.mu.Lock()
				r.now = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC).Add(s.at)
				r.mu.Unlock()
				lines = nil
				switch s.do {
				case "relist", "hang", "fail":
					c := r.send("ListPodSandbox", &runtimeapi.ListPodSandboxRequest{}, time.Time{})
					r.answer(c, &runtimeapi.ListPodSandboxResponse{}, nil)
					c = r.send("ListContainers", &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{}}, time.Time{})
					switch s.do {
					case "hang":
						open = c
					case "fail":
						r.answer(c, nil, errors.New("rpc error: code = DeadlineExceeded desc = context deadline exceeded"))
					default:
						r.answer(c, &runtimeapi.ListContainersResponse{}, nil)
					}
				case "answer":
					r.answer(open, &runtimeapi.ListContainersResponse{}, nil)
				case "filtered":
					sel := map[string]string{labelPodUID: "uid-x"}
					c := r.send("ListPodSandbox", &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}}, time.Time{})
					r.answer(c, &runtimeapi.ListPodSandboxResponse{}, nil)
					c = r.send("ListContainers", &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}}, time.Time{})
					r.answer(c, &runtimeapi.ListContainersResponse{}, nil)
				}
				r.w.mu.Lock()
				r.w.checkPLEG()
				r.w.mu.Unlock()
				r.w.deliver()
				if got := strings.Join(lines, "|"); got != s.want {
					t.Errorf("at %v (%s):\n got %q\nwant %q", s.at, s.do, got, s.want)
				}
				// The TUI's banner (Pod.NodeNote): the newest note until a
				// relist went through again.
				if s.want != "" {
					node, severe := (&Pod{w: r.w}).NodeNote()
					want := s.want
					if strings.Contains(want, "relisted again") {
						want = ""
					}
					if node != want || severe != strings.Contains(want, "not healthy") {
						t.Errorf("at %v: NodeNote %q %v, want %q", s.at, node, severe, want)
					}
				}
			}
		})
	}
}

// hangingLists is a CRI runtime whose lists answer at once; once hung,
// ListContainers waits for release.
type hangingLists struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu      sync.Mutex
	hung    bool
	release chan struct{}
}

func (h *hangingLists) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{}, nil
}

func (h *hangingLists) ListContainers(ctx context.Context, _ *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	h.mu.Lock()
	hung := h.hung
	h.mu.Unlock()
	if hung {
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &runtimeapi.ListContainersResponse{}, nil
}

// TestPLEGHungRuntime: through the proxy, in real time, a kubelet-like
// client relists every 200 ms until the runtime's ListContainers stops
// answering; the proxy says the relist late 5 s after the last one went
// through, naming the ListContainers it waits on, and says it again once
// the runtime answers.
func TestPLEGHungRuntime(t *testing.T) {
	dir, err := os.MkdirTemp("", "pxp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	rt := &hangingLists{release: make(chan struct{})}
	l, err := net.Listen("unix", filepath.Join(dir, "rt.sock"))
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, rt)
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)

	var mu sync.Mutex
	var notes []PLEGNote
	w := New(Options{OnPLEG: func(n PLEGNote) { mu.Lock(); notes = append(notes, n); mu.Unlock() }})
	t.Cleanup(w.Close)
	ps, err := proxy.New("unix://"+filepath.Join(dir, "rt.sock"), w.Hooks())
	if err != nil {
		t.Fatal(err)
	}
	ep := "unix://" + filepath.Join(dir, "p.sock")
	pl, err := proxy.Listen(ep)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ps.Serve(pl) }()
	t.Cleanup(ps.Stop)
	c, err := cri.Dial(ep, "", cri.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	relist := func() error {
		if _, err := c.ListPodSandbox(context.Background(), nil); err != nil {
			return err
		}
		_, err := c.ListContainers(context.Background(), nil)
		return err
	}
	var last time.Time // the last relist's start
	for range 3 {
		last = time.Now()
		if err := relist(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	rt.mu.Lock()
	rt.hung = true
	rt.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- relist() }()
	var late PLEGNote
	for deadline := time.Now().Add(10 * time.Second); late.Event == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		for _, n := range notes {
			if n.Event == "late" {
				late = n
			}
		}
		mu.Unlock()
	}
	since := time.Since(last)
	if late.Event == "" {
		t.Fatalf("no late note in 10 s: %+v", notes)
	}
	t.Logf("%s (%s after the last relist began)", late.Line(), since.Round(time.Millisecond))
	if since < 5*time.Second || since > 6500*time.Millisecond {
		t.Errorf("said %s after the last relist, want 5 s (and the tick's 50 ms)", since)
	}
	if late.Open == nil || late.Open.Method != "ListContainers" || !strings.Contains(late.Line(), "waiting on ListContainers") {
		t.Errorf("the note names no hung ListContainers: %s", late.Line())
	}
	close(rt.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := relist(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := notes[len(notes)-1]
		mu.Unlock()
		if n.Event == "relisted" {
			return
		}
	}
	t.Errorf("no relisted note after the runtime answered: %+v", notes)
}
