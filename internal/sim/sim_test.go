package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/fsperm"
)

const testInitRunTime = 50 * time.Millisecond

// fakeClock is a settable Options.Clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	t   *testing.T
	srv *Server
	rt  runtimeapi.RuntimeServiceClient
	im  runtimeapi.ImageServiceClient
	clk *fakeClock
	dir string
	ctx context.Context
}

// socketDir returns a directory short enough for a unix socket path.
func socketDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if len(filepath.Join(dir, ".s0123456789", "s")) > fsperm.MaxSocketPath { // where fsperm.ListenUnix binds
		var err error
		if dir, err = os.MkdirTemp("", "sim"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	return dir
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 1, 2, 15, 4, 5, 1, time.UTC)}
	dir := socketDir(t)
	srv, err := StartWithOptions(dir, Options{InitRunTime: testInitRunTime, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(srv.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return &env{
		t: t, srv: srv, clk: clk, dir: dir, ctx: ctx,
		rt: runtimeapi.NewRuntimeServiceClient(conn),
		im: runtimeapi.NewImageServiceClient(conn),
	}
}

func sandboxConfig(name string, ann map[string]string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Labels:      map[string]string{"io.kubernetes.pod.name": name, "app": name},
		Annotations: ann,
	}
}

func (e *env) runSandbox(cfg *runtimeapi.PodSandboxConfig) string {
	e.t.Helper()
	resp, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		e.t.Fatalf("RunPodSandbox: %v", err)
	}
	return resp.PodSandboxId
}

func containerConfig(name string, cmd ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:1.35"},
		Command:  cmd,
		Labels:   map[string]string{"io.kubernetes.container.name": name},
		LogPath:  name + "/0.log",
	}
}

func (e *env) create(sbID string, sbCfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	resp, err := e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbID, Config: cfg, SandboxConfig: sbCfg})
	if err != nil {
		e.t.Fatalf("CreateContainer %s: %v", cfg.Metadata.Name, err)
	}
	return resp.ContainerId
}

func (e *env) start(id string) {
	e.t.Helper()
	if _, err := e.rt.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		e.t.Fatalf("StartContainer: %v", err)
	}
}

func (e *env) status(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	resp, err := e.rt.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		e.t.Fatalf("ContainerStatus: %v", err)
	}
	return resp.Status
}

func (e *env) sandboxStatus(id string) *runtimeapi.PodSandboxStatus {
	e.t.Helper()
	resp, err := e.rt.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		e.t.Fatalf("PodSandboxStatus: %v", err)
	}
	return resp.Status
}

func wantCode(t *testing.T, err error, code codes.Code, msgPart string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("error %v: code %s, want %s", err, status.Code(err), code)
	}
	if msgPart != "" && !strings.Contains(status.Convert(err).Message(), msgPart) {
		t.Fatalf("error message %q does not contain %q", status.Convert(err).Message(), msgPart)
	}
}

func TestVersionStatusConfig(t *testing.T) {
	e := newEnv(t)
	v, err := e.rt.Version(e.ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v.RuntimeName != "podstep-sim" || v.RuntimeVersion != "0.1.0" || v.RuntimeApiVersion != "v1" || v.Version != "0.1.0" {
		t.Errorf("Version = %v", v)
	}
	st, err := e.rt.Status(e.ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conds := map[string]bool{}
	for _, c := range st.Status.Conditions {
		conds[c.Type] = c.Status
	}
	if !conds[runtimeapi.RuntimeReady] || !conds[runtimeapi.NetworkReady] {
		t.Errorf("conditions = %v", st.Status.Conditions)
	}
	if len(st.RuntimeHandlers) != 2 || st.RuntimeHandlers[0].Name != "" || st.RuntimeHandlers[1].Name != "runc" {
		t.Errorf("runtime handlers = %v", st.RuntimeHandlers)
	}
	rc, err := e.rt.RuntimeConfig(e.ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Linux.CgroupDriver != runtimeapi.CgroupDriver_CGROUPFS {
		t.Errorf("cgroup driver = %v", rc.Linux.CgroupDriver)
	}
	if !strings.HasPrefix(e.srv.Endpoint(), "unix:///") || !strings.HasSuffix(e.srv.Endpoint(), "/sim.sock") {
		t.Errorf("Endpoint = %q", e.srv.Endpoint())
	}
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	logDir := filepath.Join(e.dir, "pods", "default_web_uid-web")
	sbCfg := sandboxConfig("web", map[string]string{"kubernetes.io/config.source": "api"})
	sbCfg.LogDirectory = logDir
	sbCfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
	}}
	sbID := e.runSandbox(sbCfg)
	if len(sbID) != 64 {
		t.Errorf("sandbox ID %q is not 64 hex digits", sbID)
	}
	if fi, err := os.Stat(logDir); err != nil || !fi.IsDir() {
		t.Errorf("log directory not created: %v", err)
	}
	sb := e.sandboxStatus(sbID)
	if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY || !isSandboxAddr(sb.Network.Ip) ||
		sb.Metadata.Name != "web" || sb.Labels["app"] != "web" || sb.Annotations["kubernetes.io/config.source"] != "api" ||
		sb.Linux.Namespaces.Options.Pid != runtimeapi.NamespaceMode_CONTAINER || sb.CreatedAt != e.clk.Now().UnixNano() {
		t.Errorf("sandbox status = %v", sb)
	}

	// The image the kubelet would check first.
	is, err := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"}})
	if err != nil || is.Image == nil {
		t.Fatalf("ImageStatus busybox = %v, %v", is, err)
	}

	initID := e.create(sbID, sbCfg, containerConfig("init", "sh", "-c", "echo setup > /work/f"))
	mainCfg := containerConfig("main", "sh", "-c", "echo hello; sleep 3600")
	mainCfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/tmp/data"}}
	mainID := e.create(sbID, sbCfg, mainCfg)
	if st := e.status(initID); st.State != runtimeapi.ContainerState_CONTAINER_CREATED || st.StartedAt != 0 {
		t.Errorf("created status = %v", st)
	}

	e.start(initID)
	st := e.status(initID)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
		t.Errorf("init after start = %v", st)
	}
	e.clk.Advance(testInitRunTime)
	st = e.status(initID)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 || st.Reason != "Completed" ||
		st.FinishedAt != st.StartedAt+int64(testInitRunTime) {
		t.Errorf("init after InitRunTime = %v", st)
	}

	e.start(mainID)
	e.clk.Advance(time.Hour)
	st = e.status(mainID)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("main after an hour = %v", st)
	}
	if st.Image.Image != "docker.io/library/busybox:1.35" || st.ImageId != is.Image.Id ||
		!strings.HasPrefix(st.ImageRef, "docker.io/library/busybox@sha256:") ||
		st.LogPath != filepath.Join(logDir, "main", "0.log") || len(st.Mounts) != 1 || st.Mounts[0].ContainerPath != "/data" ||
		st.Labels["io.kubernetes.container.name"] != "main" || st.Metadata.Name != "main" {
		t.Errorf("main status = %v", st)
	}
	if _, err := e.rt.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: mainID, Cmd: []string{"true"}}); err != nil {
		t.Errorf("ExecSync: %v", err)
	}

	if _, err := e.rt.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbID}); err != nil {
		t.Fatal(err)
	}
	if sb := e.sandboxStatus(sbID); sb.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox after stop = %v", sb.State)
	}
	if st := e.status(mainID); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 || st.Reason != "Error" {
		t.Errorf("main after sandbox stop = %v", st)
	}
	if st := e.status(initID); st.ExitCode != 0 || st.Reason != "Completed" {
		t.Errorf("init after sandbox stop = %v", st)
	}
	_, err = e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbID, Config: containerConfig("late", "sleep", "1")})
	wantCode(t, err, codes.FailedPrecondition, "is not running")

	if _, err := e.rt.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sbID}); err != nil {
		t.Fatal(err)
	}
	_, err = e.rt.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: mainID})
	wantCode(t, err, codes.NotFound, mainID)
	_, err = e.rt.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sbID})
	wantCode(t, err, codes.NotFound, sbID)

	// The name is free again, and the next sandbox of the same name gets
	// the same address (its name's hash): it was given back.
	sbID2 := e.runSandbox(sbCfg)
	if sbID2 == sbID {
		t.Errorf("sandbox ID reused")
	}
	if ip := e.sandboxStatus(sbID2).Network.Ip; ip != sb.Network.Ip {
		t.Errorf("second sandbox IP = %q, want %q", ip, sb.Network.Ip)
	}
}

func TestSandboxNameReserved(t *testing.T) {
	e := newEnv(t)
	cfg := sandboxConfig("web", nil)
	cfg.Metadata.Attempt = 1
	id := e.runSandbox(cfg)
	_, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	want := `failed to reserve sandbox name "web_default_uid-web_1": name "web_default_uid-web_1" is reserved for "` + id + `"`
	wantCode(t, err, codes.Unknown, "")
	if got := status.Convert(err).Message(); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
	// Another attempt is a different name.
	cfg.Metadata.Attempt = 2
	e.runSandbox(cfg)
}

func TestRequestValidation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"sandbox without metadata", func() error {
			_, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}})
			return err
		}, codes.InvalidArgument},
		{"unknown runtime handler", func() error {
			_, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("x", nil), RuntimeHandler: "kata"})
			return err
		}, codes.Unknown},
		{"status of unknown sandbox", func() error {
			_, err := e.rt.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "nope"})
			return err
		}, codes.NotFound},
		{"status of unknown container", func() error {
			_, err := e.rt.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "nope"})
			return err
		}, codes.NotFound},
		{"container status without id", func() error {
			_, err := e.rt.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{})
			return err
		}, codes.InvalidArgument},
		{"create in unknown sandbox", func() error {
			_, err := e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "nope", Config: containerConfig("c", "sleep", "1")})
			return err
		}, codes.NotFound},
		{"create without metadata", func() error {
			_, err := e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "nope", Config: &runtimeapi.ContainerConfig{}})
			return err
		}, codes.InvalidArgument},
		{"stop unknown container", func() error {
			_, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: "nope"})
			return err
		}, codes.NotFound},
		{"stop unknown sandbox", func() error {
			_, err := e.rt.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "nope"})
			return err
		}, codes.NotFound},
		{"image status without image", func() error {
			_, err := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{}})
			return err
		}, codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.call(), tt.code, "")
		})
	}
}

func TestProcessLifetime(t *testing.T) {
	tests := []struct {
		name  string
		image string
		cmd   []string
		args  []string
		ann   map[string]string
		// completes is the MetadataRunsToCompletion sent with CreateContainer.
		completes string
		// after is how long past InitRunTime it runs before it exits.
		after time.Duration
		runs  bool
		code  int32
	}{
		{name: "init writes a file", cmd: []string{"sh", "-c", "echo x > /f"}, code: 0},
		{name: "sleep", cmd: []string{"sleep", "3600"}, after: time.Hour, code: 0},
		{name: "a script's sleeps add up", cmd: []string{"sh", "-c", "sleep 2; echo x; sleep 1m; exit 4"}, after: time.Minute + 2*time.Second, code: 4},
		{name: "a loop cannot be read: it keeps running", cmd: []string{"sh", "-c"}, args: []string{"while true; do date; sleep 5; done"}, runs: true},
		{name: "absolute sleep", cmd: []string{"/bin/sleep", "infinity"}, runs: true},
		{name: "httpd", cmd: []string{"httpd", "-f", "-p", "8080"}, runs: true},
		{name: "tail", cmd: []string{"tail", "-f", "/dev/null"}, runs: true},
		{name: "nc -l", cmd: []string{"nc", "-lk", "-p", "80"}, runs: true},
		{name: "an unknown program keeps running", cmd: []string{"nc", "example.com", "80"}, runs: true},
		{name: "an unknown program in an init container exits 0", cmd: []string{"/cp-tool", "/a", "/b"}, completes: "an init container", code: 0},
		{name: "a script exits with its code", cmd: []string{"sh", "-c", "echo crashing; exit 2"}, code: 2},
		{name: "a script's code wins over its role", cmd: []string{"sh", "-c", "exit 3"}, completes: "an init container", code: 3},
		{name: "server image args only runs", image: "coredns/coredns:1.9.4", args: []string{"-conf", "/etc/coredns/Corefile"}, runs: true},
		{name: "busybox args only are its command", args: []string{"sh", "-c", "exit 5"}, code: 5},
		{name: "word containing sleep is not sleep", cmd: []string{"echo", "sleepy"}, code: 0},
		{name: "busybox default shell exits", cmd: nil, code: 0},
		{name: "server image default command runs", image: "nginx:1.27", runs: true},
		{name: "exit-code fault beats sleep", cmd: []string{"sleep", "3600"}, ann: map[string]string{AnnotationExitCode + "c": "3"}, code: 3},
		{name: "exit-code fault zero", cmd: []string{"sleep", "3600"}, ann: map[string]string{AnnotationExitCode + "c": "0"}, code: 0},
		{name: "keep-running fault", cmd: []string{"true"}, ann: map[string]string{AnnotationKeepRunning + "c": "true"}, runs: true},
		{name: "fault for another container", cmd: []string{"true"}, ann: map[string]string{AnnotationExitCode + "other": "3"}, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			sbCfg := sandboxConfig("p", tt.ann)
			sbID := e.runSandbox(sbCfg)
			cfg := containerConfig("c", tt.cmd...)
			cfg.Args = tt.args
			if tt.image != "" {
				cfg.Image.Image = tt.image
				if _, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: cfg.Image, SandboxConfig: sbCfg}); err != nil {
					t.Fatal(err)
				}
			}
			ctx := e.ctx
			if tt.completes != "" {
				e.ctx = metadata.AppendToOutgoingContext(ctx, MetadataRunsToCompletion, tt.completes)
			}
			id := e.create(sbID, sbCfg, cfg)
			e.ctx = ctx
			e.start(id)
			e.clk.Advance(testInitRunTime + tt.after - time.Nanosecond)
			if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				t.Fatalf("exited before InitRunTime: %v", st)
			}
			e.clk.Advance(time.Nanosecond)
			st := e.status(id)
			if tt.runs {
				if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
					t.Fatalf("state = %v, want running", st.State)
				}
				return
			}
			wantReason := "Completed"
			if tt.code != 0 {
				wantReason = "Error"
			}
			if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != tt.code || st.Reason != wantReason {
				t.Fatalf("status = %v %d %q, want exited %d %q", st.State, st.ExitCode, st.Reason, tt.code, wantReason)
			}
			// The exit is also visible in ListContainers.
			l, err := e.rt.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: id}})
			if err != nil || len(l.Containers) != 1 || l.Containers[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
				t.Fatalf("ListContainers = %v, %v", l, err)
			}
		})
	}
}

func TestRealClockExit(t *testing.T) {
	dir := socketDir(t)
	srv, err := StartWithOptions(dir, Options{InitRunTime: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	conn, err := grpc.NewClient(srv.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	e := &env{t: t, srv: srv, dir: dir, ctx: context.Background(), rt: runtimeapi.NewRuntimeServiceClient(conn)}
	sbCfg := sandboxConfig("p", nil)
	id := e.create(e.runSandbox(sbCfg), sbCfg, containerConfig("c", "true"))
	e.start(id)
	deadline := time.Now().Add(5 * time.Second)
	for e.status(id).State != runtimeapi.ContainerState_CONTAINER_EXITED {
		if time.Now().After(deadline) {
			t.Fatal("container did not exit")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		run  func(e *env, sbCfg *runtimeapi.PodSandboxConfig)
	}{
		{"sandbox-error", map[string]string{AnnotationSandboxError: "failed to setup network for sandbox: plugin bridge failed"},
			func(e *env, sbCfg *runtimeapi.PodSandboxConfig) {
				_, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
				wantCode(e.t, err, codes.Unknown, "plugin bridge failed")
				// Nothing was created and the name is not held.
				l, _ := e.rt.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{})
				if len(l.Items) != 0 {
					e.t.Errorf("sandboxes after failure: %v", l.Items)
				}
			}},
		{"pull-error", map[string]string{AnnotationPullError: "nginx:bad=failed to resolve reference: not found\nother:1=x"},
			func(e *env, sbCfg *runtimeapi.PodSandboxConfig) {
				e.runSandbox(sbCfg)
				_, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "nginx:bad"}, SandboxConfig: sbCfg})
				wantCode(e.t, err, codes.Unknown, "")
				want := `failed to pull and unpack image "docker.io/library/nginx:bad": failed to resolve reference: not found`
				if got := status.Convert(err).Message(); got != want {
					e.t.Errorf("message\n got %s\nwant %s", got, want)
				}
				is, _ := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "nginx:bad"}})
				if is.GetImage() != nil {
					e.t.Errorf("failed pull stored the image")
				}
				// Other images still pull.
				if _, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "nginx:good"}, SandboxConfig: sbCfg}); err != nil {
					e.t.Error(err)
				}
			}},
		{"faults from ImageSpec annotations", map[string]string{AnnotationMissingImage: "busybox:1.35", AnnotationPullError: "busybox:1.35=denied"},
			func(e *env, sbCfg *runtimeapi.PodSandboxConfig) {
				// The kubelet copies pod annotations into the ImageSpec; no sandbox yet.
				spec := &runtimeapi.ImageSpec{Image: "busybox:1.35", Annotations: sbCfg.Annotations}
				is, err := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: spec})
				if err != nil || is.GetImage() != nil {
					e.t.Fatalf("ImageStatus = %v, %v; want absent", is, err)
				}
				_, err = e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: spec})
				wantCode(e.t, err, codes.Unknown, `failed to pull and unpack image "docker.io/library/busybox:1.35": denied`)
			}},
		{"missing-image", map[string]string{AnnotationMissingImage: "busybox:1.35"},
			func(e *env, sbCfg *runtimeapi.PodSandboxConfig) {
				// Looked up before the pod exists: preloaded.
				is, _ := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"}})
				if is.GetImage() == nil {
					e.t.Fatal("busybox not preloaded")
				}
				sbID := e.runSandbox(sbCfg)
				is, _ = e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}})
				if is.GetImage() != nil {
					e.t.Fatal("missing image is present")
				}
				_, err := e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbID, Config: containerConfig("c", "sleep", "1"), SandboxConfig: sbCfg})
				wantCode(e.t, err, codes.NotFound, "failed to resolve image")
				// Other busybox tags stay preloaded; a pull brings it back.
				is, _ = e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}})
				if is.GetImage() == nil {
					e.t.Fatal("busybox:1.36 not preloaded")
				}
				if _, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"}, SandboxConfig: sbCfg}); err != nil {
					e.t.Fatal(err)
				}
				e.create(sbID, sbCfg, containerConfig("c", "sleep", "1"))
			}},
		{"create-error", map[string]string{AnnotationCreateError + "c": "failed to create containerd container: boom"},
			func(e *env, sbCfg *runtimeapi.PodSandboxConfig) {
				sbID := e.runSandbox(sbCfg)
				_, err := e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbID, Config: containerConfig("c", "sleep", "1"), SandboxConfig: sbCfg})
				wantCode(e.t, err, codes.Unknown, "boom")
				e.create(sbID, sbCfg, containerConfig("d", "sleep", "1"))
			}},
		{"start-error", map[string]string{AnnotationStartError + "c": `exec: "nope": executable file not found in $PATH`},
			func(e *env, sbCfg *runtimeapi.PodSandboxConfig) {
				sbID := e.runSandbox(sbCfg)
				id := e.create(sbID, sbCfg, containerConfig("c", "nope"))
				_, err := e.rt.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
				wantCode(e.t, err, codes.Unknown, "executable file not found")
				st := e.status(id)
				if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 128 || st.Reason != "StartError" || !strings.Contains(st.Message, "nope") {
					e.t.Errorf("status after start error = %v", st)
				}
			}},
		{"exec faults", map[string]string{AnnotationExecExitCode + "c": "1", AnnotationExecStderr + "c": "probe failed"},
			func(e *env, sbCfg *runtimeapi.PodSandboxConfig) {
				sbID := e.runSandbox(sbCfg)
				id := e.create(sbID, sbCfg, containerConfig("c", "sleep", "3600"))
				e.start(id)
				r, err := e.rt.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"cat", "/ready"}})
				if err != nil || r.ExitCode != 1 || string(r.Stderr) != "probe failed" || len(r.Stdout) != 0 {
					e.t.Errorf("ExecSync = %v, %v", r, err)
				}
				other := e.create(sbID, sbCfg, containerConfig("d", "sleep", "3600"))
				e.start(other)
				r, err = e.rt.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: other, Cmd: []string{"true"}})
				if err != nil || r.ExitCode != 0 || len(r.Stderr) != 0 {
					e.t.Errorf("ExecSync other = %v, %v", r, err)
				}
			}},
		{"delay", map[string]string{AnnotationDelay + "StartContainer": "150ms", AnnotationDelay + "ImageStatus": "10s"},
			func(e *env, sbCfg *runtimeapi.PodSandboxConfig) {
				sbID := e.runSandbox(sbCfg)
				id := e.create(sbID, sbCfg, containerConfig("c", "sleep", "3600"))
				t0 := time.Now()
				e.start(id)
				if d := time.Since(t0); d < 150*time.Millisecond {
					e.t.Errorf("StartContainer took %v, want >= 150ms", d)
				}
				ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
				defer cancel()
				t0 = time.Now()
				_, err := e.im.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
				wantCode(e.t, err, codes.DeadlineExceeded, "")
				if d := time.Since(t0); d > 5*time.Second {
					e.t.Errorf("cancelled delay took %v", d)
				}
				// Methods without a delay are not slowed down.
				t0 = time.Now()
				e.status(id)
				if d := time.Since(t0); d > time.Second {
					e.t.Errorf("ContainerStatus took %v", d)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.run(e, sandboxConfig("p", tt.ann))
		})
	}
}

func TestIdempotentTeardown(t *testing.T) {
	e := newEnv(t)
	sbCfg := sandboxConfig("p", nil)
	sbID := e.runSandbox(sbCfg)
	created := e.create(sbID, sbCfg, containerConfig("created", "sleep", "1"))
	id := e.create(sbID, sbCfg, containerConfig("c", "sleep", "3600"))
	e.start(id)

	for i := range 2 {
		if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 30}); err != nil {
			t.Fatalf("StopContainer #%d: %v", i, err)
		}
		if st := e.status(id); st.ExitCode != 137 || st.Reason != "Error" {
			t.Fatalf("after stop #%d: %v", i, st)
		}
	}
	for i := range 2 {
		if _, err := e.rt.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbID}); err != nil {
			t.Fatalf("StopPodSandbox #%d: %v", i, err)
		}
	}
	if st := e.status(created); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("created container after sandbox stop = %v", st.State)
	}
	for i := range 2 {
		if _, err := e.rt.RemoveContainer(e.ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			t.Fatalf("RemoveContainer #%d: %v", i, err)
		}
	}
	for i := range 2 {
		if _, err := e.rt.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sbID}); err != nil {
			t.Fatalf("RemovePodSandbox #%d: %v", i, err)
		}
	}
	if _, err := e.rt.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: "unknown"}); err != nil {
		t.Errorf("RemovePodSandbox unknown: %v", err)
	}
	l, err := e.rt.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{})
	if err != nil || len(l.Containers) != 0 {
		t.Errorf("containers left: %v, %v", l, err)
	}

	// RemovePodSandbox on a ready sandbox stops it first.
	sbID = e.runSandbox(sbCfg)
	id = e.create(sbID, sbCfg, containerConfig("c", "sleep", "3600"))
	e.start(id)
	if _, err := e.rt.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sbID}); err != nil {
		t.Fatal(err)
	}
	// The container name is released with the sandbox.
	sbID = e.runSandbox(sbCfg)
	e.create(sbID, sbCfg, containerConfig("c", "sleep", "3600"))
	_, err = e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbID, Config: containerConfig("c", "sleep", "3600")})
	wantCode(t, err, codes.Unknown, `failed to reserve container name "c_p_default_uid-p_0"`)
}

func TestListFilters(t *testing.T) {
	e := newEnv(t)
	aCfg, bCfg := sandboxConfig("a", nil), sandboxConfig("b", nil)
	a, b := e.runSandbox(aCfg), e.runSandbox(bCfg)
	if _, err := e.rt.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: b}); err != nil {
		t.Fatal(err)
	}
	a1 := e.create(a, aCfg, containerConfig("one", "sleep", "3600"))
	a2 := e.create(a, aCfg, containerConfig("two", "true"))
	e.start(a1)
	e.start(a2)
	e.clk.Advance(testInitRunTime)

	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	notReady := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	sbTests := []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"all", nil, []string{a, b}},
		{"id", &runtimeapi.PodSandboxFilter{Id: b}, []string{b}},
		{"id prefix", &runtimeapi.PodSandboxFilter{Id: a[:12]}, []string{a}},
		{"ready", &runtimeapi.PodSandboxFilter{State: ready}, []string{a}},
		{"not ready", &runtimeapi.PodSandboxFilter{State: notReady}, []string{b}},
		{"label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "b"}}, []string{b}},
		{"label mismatch", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "c"}}, nil},
		{"id and state", &runtimeapi.PodSandboxFilter{Id: a, State: notReady}, nil},
	}
	for _, tt := range sbTests {
		t.Run("sandbox/"+tt.name, func(t *testing.T) {
			l, err := e.rt.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range l.Items {
				got = append(got, it.Id)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	running := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	exited := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}
	cTests := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"all", nil, []string{a1, a2}},
		{"id", &runtimeapi.ContainerFilter{Id: a2}, []string{a2}},
		{"sandbox", &runtimeapi.ContainerFilter{PodSandboxId: a}, []string{a1, a2}},
		{"other sandbox", &runtimeapi.ContainerFilter{PodSandboxId: b}, nil},
		{"running", &runtimeapi.ContainerFilter{State: running}, []string{a1}},
		{"exited", &runtimeapi.ContainerFilter{State: exited}, []string{a2}},
		{"label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "two"}}, []string{a2}},
		{"sandbox and state", &runtimeapi.ContainerFilter{PodSandboxId: a, State: running}, []string{a1}},
	}
	for _, tt := range cTests {
		t.Run("container/"+tt.name, func(t *testing.T) {
			l, err := e.rt.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range l.Containers {
				got = append(got, c.Id)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLogFile(t *testing.T) {
	e := newEnv(t)
	sbCfg := sandboxConfig("p", nil)
	sbCfg.LogDirectory = filepath.Join(e.dir, "logs", "default_p_uid-p")
	sbID := e.runSandbox(sbCfg)
	cfg := containerConfig("c", "sh", "-c", `echo hello; echo "two  words" && echo $GREETING ${NAME} > /tmp/f; echo 'it''s' >&2; echo -n done`)
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "GREETING", Value: []byte("hi")}}
	id := e.create(sbID, sbCfg, cfg)
	e.start(id)
	got, err := os.ReadFile(filepath.Join(sbCfg.LogDirectory, "c", "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := "2026-01-02T15:04:05.000000001Z stdout F hello\n" +
		"2026-01-02T15:04:05.000000001Z stdout F two  words\n" +
		"2026-01-02T15:04:05.000000001Z stderr F its\n" +
		"2026-01-02T15:04:05.000000001Z stdout F done\n"
	if string(got) != want {
		t.Errorf("log file:\n%s\nwant:\n%s", got, want)
	}

	// No echo: the file exists and is empty.
	quiet := e.create(sbID, sbCfg, containerConfig("quiet", "sleep", "3600"))
	e.start(quiet)
	if b, err := os.ReadFile(filepath.Join(sbCfg.LogDirectory, "quiet", "0.log")); err != nil || len(b) != 0 {
		t.Errorf("quiet log = %q, %v", b, err)
	}
}

func TestEchoLines(t *testing.T) {
	env := map[string]string{"X": "ex"}
	tests := []struct {
		argv []string
		want []string // "stream text"
	}{
		{[]string{"echo", "a", "b"}, []string{"stdout a b"}},
		{[]string{"/bin/echo", "it's"}, []string{"stdout it's"}},
		{[]string{"sh", "-c", "echo a > /f"}, nil},
		{[]string{"sh", "-c", "echo a>>/f; echo b 2>/dev/null"}, []string{"stdout b"}},
		{[]string{"sh", "-c", "echo a | tee /f"}, nil},
		{[]string{"sh", "-c", "echo a 1>&2 || echo b"}, []string{"stderr a", "stdout b"}},
		{[]string{"sh", "-c", "while true; do echo tick $X; sleep 1; done"}, []string{"stdout tick ex"}},
		{[]string{"sh", "-ec", "echo 'a;b' \"c\\\"d\""}, []string{`stdout a;b c"d`}},
		{[]string{"sh", "-c", "echo $(hostname) $UNSET."}, []string{"stdout $(hostname) ."}},
		{[]string{"sleep", "1"}, nil},
		{[]string{"sh", "-c", "echo one\necho two"}, []string{"stdout one", "stdout two"}},
	}
	for _, tt := range tests {
		var got []string
		for _, l := range echoLines(tt.argv, env) {
			got = append(got, l.stream+" "+l.text)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("echoLines(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

func TestImages(t *testing.T) {
	norm := []struct{ in, want string }{
		{"busybox", "docker.io/library/busybox:latest"},
		{"busybox:1.35", "docker.io/library/busybox:1.35"},
		{"library/busybox:1.35", "docker.io/library/busybox:1.35"},
		{"docker.io/busybox", "docker.io/library/busybox:latest"},
		{"index.docker.io/library/busybox:1", "docker.io/library/busybox:1"},
		{"myorg/app:v2", "docker.io/myorg/app:v2"},
		{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"},
		{"localhost:5000/app", "localhost:5000/app:latest"},
		{"localhost/app:1", "localhost/app:1"},
		{"busybox@sha256:" + strings.Repeat("a", 64), "docker.io/library/busybox@sha256:" + strings.Repeat("a", 64)},
	}
	for _, tt := range norm {
		if got := normalizeRef(tt.in); got != tt.want {
			t.Errorf("normalizeRef(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}

	e := newEnv(t)
	status := func(ref string) *runtimeapi.Image {
		t.Helper()
		r, err := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Image
	}
	if status("nginx:1.27") != nil {
		t.Fatal("nginx present before pull")
	}
	bb := status("busybox:1.35")
	if bb == nil || bb.Id != imageID("docker.io/library/busybox:1.35") || bb.Size != ImageSize ||
		len(bb.RepoTags) != 1 || bb.RepoTags[0] != "docker.io/library/busybox:1.35" ||
		len(bb.RepoDigests) != 1 || !strings.HasPrefix(bb.RepoDigests[0], "docker.io/library/busybox@sha256:") {
		t.Fatalf("busybox = %v", bb)
	}
	if got := status(bb.Id); got == nil || got.Id != bb.Id {
		t.Errorf("ImageStatus by ID = %v", got)
	}
	if got := status("docker.io/library/busybox:1.35"); got == nil || got.Id != bb.Id {
		t.Errorf("ImageStatus by normalized name = %v", got)
	}
	if got := status(bb.RepoDigests[0]); got == nil || got.Id != bb.Id {
		t.Errorf("ImageStatus by repo digest = %v", got)
	}
	if status("registry.k8s.io/pause:3.10") == nil {
		t.Error("pause not preloaded")
	}

	pr, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "nginx:1.27"}})
	if err != nil {
		t.Fatal(err)
	}
	if pr.ImageRef != imageID("docker.io/library/nginx:1.27") {
		t.Errorf("PullImage ref = %q", pr.ImageRef)
	}
	if img := status("nginx:1.27"); img == nil || img.Id != pr.ImageRef {
		t.Errorf("nginx after pull = %v", img)
	}

	l, err := e.im.ListImages(e.ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, img := range l.Images {
		tags = append(tags, img.RepoTags...)
	}
	want := "docker.io/library/busybox:1.35,docker.io/library/nginx:1.27,podstep.local/pause:1.0,registry.k8s.io/pause:3.10"
	if strings.Join(tags, ",") != want {
		t.Errorf("ListImages tags = %v, want %s", tags, want)
	}
	l, err = e.im.ListImages(e.ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "nginx:1.27"}}})
	if err != nil || len(l.Images) != 1 {
		t.Errorf("ListImages filtered = %v, %v", l, err)
	}

	fs, err := e.im.ImageFsInfo(e.ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(fs.ImageFilesystems) != 1 || fs.ImageFilesystems[0].UsedBytes.Value != 4*ImageSize {
		t.Errorf("ImageFsInfo = %v, %v", fs, err)
	}

	for _, ref := range []string{"nginx:1.27", "nginx:1.27", bb.Id} {
		if _, err := e.im.RemoveImage(e.ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
			t.Errorf("RemoveImage %s: %v", ref, err)
		}
	}
	if status("nginx:1.27") != nil || status("busybox:1.35") != nil {
		t.Error("images still present after RemoveImage")
	}
}

func TestStopRemovesSocket(t *testing.T) {
	dir := socketDir(t)
	srv, err := Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, SocketName)
	if _, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	srv.Stop()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket still present: %v", err)
	}
	if _, err := Start(filepath.Join(dir, "missing")); err == nil {
		t.Error("Start in a missing directory succeeded")
	}
}

// TestPathsConfined: the runtime writes only in its own dirs. A request
// naming a log_directory elsewhere (a root-owned dir), a log_path that
// climbs out of its sandbox's (../../x) or an absolute one is refused with
// InvalidArgument, and a link or hard link planted inside its dirs is not
// written through: the root-owned "script" outside is never touched.
func TestPathsConfined(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	script := filepath.Join(outside, "script.sh")
	const content = "#!/bin/sh\necho root runs this\n"
	if err := os.WriteFile(script, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(e.dir, "logs")
	if err := os.MkdirAll(filepath.Join(logs, "planted", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(logs, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(script, filepath.Join(logs, "planted", "c", "0.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(logs, "hard", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(script, filepath.Join(logs, "hard", "c", "0.log")); err != nil {
		t.Fatal(err)
	}

	for i, tc := range []struct {
		name        string
		dir, path   string
		code        codes.Code
		want, where string // the message, and the call that refuses
	}{
		{"log_directory elsewhere", outside, "c/0.log", codes.InvalidArgument, "is outside the simulated runtime's directories", "RunPodSandbox"},
		{"log_directory relative", "logs/x", "c/0.log", codes.InvalidArgument, "is not an absolute path", "RunPodSandbox"},
		{"log_directory climbing out", filepath.Join(e.dir, "..", filepath.Base(outside)), "c/0.log", codes.InvalidArgument, "is outside", "RunPodSandbox"},
		{"log_directory through a link", filepath.Join(logs, "linkdir", "pod"), "c/0.log", codes.Unknown, "is a symbolic link", "RunPodSandbox"},
		{"log_path climbing out", filepath.Join(logs, "p"), "../../../" + filepath.Base(outside) + "/script.sh", codes.InvalidArgument, "is not a relative path inside the sandbox's log_directory", "CreateContainer"},
		{"log_path ../../x", filepath.Join(logs, "p"), "../../x", codes.InvalidArgument, "log_path", "CreateContainer"},
		{"log_path absolute", filepath.Join(logs, "p"), script, codes.InvalidArgument, "log_path", "CreateContainer"},
		{"log file a planted link", filepath.Join(logs, "planted"), "c/0.log", codes.Unknown, "is a symbolic link", "StartContainer"},
		{"log file a hard link", filepath.Join(logs, "hard"), "c/0.log", codes.Unknown, "not a regular file of its own", "StartContainer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbCfg := sandboxConfig(fmt.Sprintf("p%d", i), nil)
			sbCfg.LogDirectory = tc.dir
			cfg := containerConfig("c", "sh", "-c", "echo pwned")
			cfg.LogPath = tc.path
			var err error
			where := "RunPodSandbox"
			sb, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
			if err == nil {
				where = "CreateContainer"
				var c *runtimeapi.CreateContainerResponse
				c, err = e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: cfg, SandboxConfig: sbCfg})
				if err == nil {
					where = "StartContainer"
					_, err = e.rt.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
				}
			}
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) || where != tc.where {
				t.Errorf("%s: %v, want %s from %s saying %q", where, err, tc.code, tc.where, tc.want)
			}
			if b, _ := os.ReadFile(script); string(b) != content {
				t.Fatalf("the script outside was written: %q", b)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("made outside: %v", ents)
			}
		})
	}
}

// TestSocketPrivate: under umask 000 the socket is 0600 from the start,
// and a dir others may write to is refused.
func TestSocketPrivate(t *testing.T) {
	dir := socketDir(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	srv, err := Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(srv.SocketPath())
	srv.Stop()
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != SocketMode {
		t.Errorf("socket %v (%v), want srw-------", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the dir: %v", ents)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if srv, err := Start(dir); err == nil || !strings.Contains(err.Error(), "is writable by group and others") {
		if srv != nil {
			srv.Stop()
		}
		t.Errorf("a world-writable dir: %v, want it refused", err)
	}
}
