package steps

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/sim"
)

// simRuntime starts a simulated runtime (init containers run 20 ms) and a
// client for it whose calls give up after 5 s, so that a runtime the test
// stops fails the calls sent to it instead of holding them. Both are gone
// when the test ends; the test may stop the runtime before.
func simRuntime(t *testing.T) (*sim.Server, *cri.Client) {
	t.Helper()
	srv, err := sim.StartWithOptions(t.TempDir(), sim.Options{InitRunTime: 20 * time.Millisecond, Dirs: []string{os.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c, err := cri.Dial(srv.Endpoint(), "", cri.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return srv, c
}

// TestTeardownWhenRuntimeGone: the runtime goes away after the pod started.
// Teardown cannot confirm that the containers are gone, so it keeps the pod
// and log dirs (a running container may still use its volumes), and
// LeftBehind lists everything for `podstep cleanup`.
func TestTeardownWhenRuntimeGone(t *testing.T) {
	srv, c := simRuntime(t)
	o := testOptions(t)
	e := runAll(t, load(t, repoFile("testdata/pods/hello.yaml")), c, o)
	if _, failed := e.Failed(); failed {
		t.Fatal("hello failed")
	}
	before := e.LeftBehind()
	if before.Sandbox == "" || len(before.Containers) != 1 || len(before.Dirs) != 2 {
		t.Fatalf("LeftBehind of a running pod = %+v, want its sandbox, 1 container and 2 dirs", before)
	}
	srv.Stop()
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var dirs Step
	for _, s := range e.Steps() {
		if s.Stage != StageTeardown {
			continue
		}
		if s.State != Failed {
			t.Errorf("teardown step %s: %s, want failed with the runtime gone", s.Name, s.State)
		}
		for _, call := range s.Calls {
			if !cri.Unavailable(call.Err) {
				t.Errorf("%s %s: %v, want Unavailable", s.Name, call.Method, call.Err)
			}
		}
		if s.Name == "remove-dirs" {
			dirs = s
		}
	}
	if dirs.Result.Reason != reason.PodDirsKept || !strings.Contains(dirs.Result.Message, "container hello") {
		t.Errorf("remove-dirs: %s %q, want PodDirsKept naming container hello", dirs.Result.Reason, dirs.Result.Message)
	}
	podDir := filepath.Join(o.Config.RootDir, "pods", string(e.Pod().UID))
	logDir := filepath.Join(o.Config.LogDir, "default_hello_"+string(e.Pod().UID))
	for _, d := range []string{podDir, logDir} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed while its container may run: %v", d, err)
		}
	}
	left := e.LeftBehind()
	if left.Sandbox != before.Sandbox || len(left.Containers) != 1 || !strings.HasPrefix(left.Containers[0], "hello ") ||
		strings.Join(left.Dirs, ",") != podDir+","+logDir {
		t.Errorf("LeftBehind = %+v, want sandbox %s, container hello, dirs %s and %s", left, before.Sandbox, podDir, logDir)
	}
	if s := left.String(); !strings.Contains(s, "sandbox "+shortID(before.Sandbox)) || !strings.Contains(s, "dir "+podDir) {
		t.Errorf("LeftBehind.String() = %q", s)
	}
}

// TestLeftBehindAfterTeardown: a teardown that finished leaves nothing.
func TestLeftBehindAfterTeardown(t *testing.T) {
	c := newSim(t)
	e := runAll(t, load(t, repoFile("testdata/pods/init.yaml")), c, testOptions(t))
	if e.LeftBehind().Empty() {
		t.Fatal("LeftBehind is empty before teardown")
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := e.LeftBehind(); !l.Empty() || l.String() != "nothing" {
		t.Errorf("LeftBehind after teardown = %+v (%s)", l, l)
	}
}

// startingRuntime refuses to remove a container while its start runs, as
// containerd does, for the first refusals RemoveContainer calls; then the
// container has started.
type startingRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu       sync.Mutex
	refusals int
	calls    []string
}

var _ runtimeapi.RuntimeServiceServer = (*startingRuntime)(nil)

func (s *startingRuntime) record(m string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, m)
	return s.refusals
}

func (s *startingRuntime) RemoveContainer(context.Context, *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if s.record("RemoveContainer") > 0 {
		s.mu.Lock()
		s.refusals--
		s.mu.Unlock()
		return nil, status.Error(codes.Unknown, `failed to set removing state for container "c1": container is in starting state, can't be removed`)
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (s *startingRuntime) ContainerStatus(context.Context, *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	state := runtimeapi.ContainerState_CONTAINER_CREATED
	if s.record("ContainerStatus") == 0 {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: "c1", State: state}}, nil
}

func (s *startingRuntime) StopContainer(context.Context, *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s.record("StopContainer")
	return &runtimeapi.StopContainerResponse{}, nil
}

// TestRemoveContainerWaitsForStart: a container "in starting state" is
// removed once its start ended, and stopped first when it started.
func TestRemoveContainerWaitsForStart(t *testing.T) {
	for _, tc := range []struct {
		refusals int
		want     string
	}{
		{0, "RemoveContainer"},
		{1, "RemoveContainer ContainerStatus StopContainer RemoveContainer"},
		{3, "RemoveContainer ContainerStatus RemoveContainer ContainerStatus RemoveContainer ContainerStatus StopContainer RemoveContainer"},
	} {
		srv := &startingRuntime{refusals: tc.refusals}
		e := New(load(t, repoFile("testdata/pods/hello.yaml")), serveFake(t, srv), testOptions(t))
		if err := e.removeContainer(context.Background(), "c1"); err != nil {
			t.Errorf("%d refusals: %v", tc.refusals, err)
		}
		if got := strings.Join(srv.calls, " "); got != tc.want {
			t.Errorf("%d refusals: calls %s\nwant %s", tc.refusals, got, tc.want)
		}
		if !e.rt.removed["c1"] {
			t.Errorf("%d refusals: c1 not recorded as removed", tc.refusals)
		}
	}
}

// TestLeftBehindWhileRunning: LeftBehind may be called while steps run (a
// second Ctrl-C asks it from the signal goroutine); run with -race.
func TestLeftBehindWhileRunning(t *testing.T) {
	c := newSim(t)
	e := New(load(t, repoFile("testdata/pods/init.yaml")), c, testOptions(t))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !e.Finished() {
			if err := e.Continue(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
		if err := e.Teardown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	for {
		select {
		case <-done:
			if l := e.LeftBehind(); !l.Empty() {
				t.Errorf("LeftBehind after teardown = %s", l)
			}
			return
		default:
			_ = e.LeftBehind().String()
		}
	}
}

// TestSidecarsStopLast: a pod with sidecars is torn down as the kubelet's
// terminationOrdering does it: the regular containers first, then the
// sidecars, the last declared first, each StopContainer only once the ones
// before it answered.
func TestSidecarsStopLast(t *testing.T) {
	_, c := simRuntime(t)
	b := load(t, repoFile("internal/scenario/data/sidecar-init.yaml"))
	always := corev1.ContainerRestartPolicyAlways
	second := *b.Pod.Spec.InitContainers[0].DeepCopy()
	second.Name, second.RestartPolicy = "logs", &always
	b.Pod.Spec.InitContainers = append(b.Pod.Spec.InitContainers, second)
	e := runAll(t, b, c, testOptions(t))
	if _, failed := e.Failed(); failed {
		t.Fatal("the sidecar pod failed")
	}
	ids := map[string]string{}
	for _, in := range e.created() {
		ids[in.id] = in.c.spec.Name
	}
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var order []string
	var prevEnd time.Time
	for _, s := range e.Steps() {
		if s.Name != "stop-containers" {
			continue
		}
		calls := append([]cri.Call(nil), s.Calls...)
		sort.Slice(calls, func(i, j int) bool { return calls[i].Start.Before(calls[j].Start) })
		for _, call := range calls {
			name := ids[call.Request.(*runtimeapi.StopContainerRequest).GetContainerId()]
			order = append(order, name)
			if name != "app" && call.Start.Before(prevEnd) {
				t.Errorf("StopContainer %s sent before the one before it answered", name)
			}
			prevEnd = call.Start.Add(call.Duration)
		}
	}
	if got := strings.Join(order, ","); got != "app,logs,proxy" {
		t.Errorf("StopContainer order %s, want app,logs,proxy (regular containers, then sidecars last declared first)", got)
	}
}

// TestExitedContainersNotStopped: at teardown only running containers get
// StopContainer, as the kubelet's killPod (ConvertPodStatusToRunningPod
// keeps the running ones): a completed job's container is left to
// StopPodSandbox and RemoveContainer.
func TestExitedContainersNotStopped(t *testing.T) {
	_, c := simRuntime(t)
	e := runAll(t, load(t, repoFile("internal/scenario/data/completed.yaml")), c, testOptions(t))
	if err := e.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, s := range e.Steps() {
		if s.Stage == StageTeardown {
			for _, call := range s.Calls {
				methods = append(methods, call.Method)
			}
		}
	}
	if got := strings.Join(methods, ","); got != "StopPodSandbox,RemoveContainer,RemovePodSandbox" {
		t.Errorf("teardown of a completed pod: %s, want StopPodSandbox,RemoveContainer,RemovePodSandbox (no StopContainer for an exited container)", got)
	}
}
