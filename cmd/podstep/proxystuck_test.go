package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/live/livetest"
)

// hungRuntime is a CRI runtime whose RunPodSandbox reserves the sandbox's
// name, as containerd's does (NAME_NAMESPACE_UID_ATTEMPT, before the
// network is set up), then never answers, as when a CNI ADD hangs: the
// caller giving up does not stop it, and the name stays reserved; a second
// RunPodSandbox of the name fails as containerd's does.
type hungRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu       sync.Mutex
	reserved map[string]string
	stop     chan struct{}
}

func (h *hungRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "hung", RuntimeVersion: "0", RuntimeApiVersion: "v1"}, nil
}

func (h *hungRuntime) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	md := req.GetConfig().GetMetadata()
	name := fmt.Sprintf("%s_%s_%s_%d", md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt())
	h.mu.Lock()
	if id, ok := h.reserved[name]; ok {
		h.mu.Unlock()
		return nil, status.Errorf(codes.Unknown, "failed to reserve sandbox name %q: name %q is reserved for %q", name, name, id)
	}
	h.reserved[name] = fmt.Sprintf("%064x", len(h.reserved)+1)
	h.mu.Unlock()
	<-h.stop // the caller's context is not heeded: the runtime goes on
	return nil, status.Error(codes.Unavailable, "stopped")
}

// startHungRuntime serves a hungRuntime on a unix socket in dir.
func startHungRuntime(t *testing.T, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "hung.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	h := &hungRuntime{reserved: map[string]string{}, stop: make(chan struct{})}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, h)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { close(h.stop); srv.Stop() })
	return "unix://" + sock
}

// TestProxyStuck: a kubelet's RunPodSandbox that the runtime never
// answers is named, with its age and the deadline the call carries, in
// the proxy's output (text and JSON) within 1 s of the kubelet sending
// it; once the kubelet gives up, its retry with the same name fails "name
// is reserved", and the failed step names the earlier call as the cause.
func TestProxyStuck(t *testing.T) {
	for _, output := range []string{"json", "text"} {
		t.Run(output, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "pxs")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			upstream := startHungRuntime(t, dir)
			sock := filepath.Join(dir, "p.sock")
			out := &lockedBuffer{}
			_, stop := startProxy(t, bin, sock, upstream, out, "-o", output)
			t.Cleanup(stop)
			conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			rt := runtimeapi.NewRuntimeServiceClient(conn)
			labels := map[string]string{"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "uid-web"}
			cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}, Labels: labels}
			// The kubelet's deadline for RunPodSandbox: 2 × runtimeRequestTimeout (here 2 × 1.5 s).
			const deadline = 3 * time.Second
			sent := time.Now()
			errc := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				_, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
				errc <- err
			}()
			// Named at its first check past 0.5 s: 0.5s, or later on a
			// loaded machine (the bound below is what counts).
			want := regexp.MustCompile(`stuck: default/web: RunPodSandbox #1 0\.[5-9]s, no answer; the kubelet gives up at 3\.0s`)
			if output == "json" {
				want = regexp.MustCompile(`"event":"slow","call":\{"seq":1,"method":"RunPodSandbox"`)
			}
			var seen time.Duration
			for time.Since(sent) < 5*time.Second && seen == 0 {
				if want.MatchString(out.String()) {
					seen = time.Since(sent)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if seen == 0 || seen > time.Second {
				t.Fatalf("the hung call was named after %s, want within 1 s; output:\n%s", seen, out.String())
			}
			t.Logf("the hung call was named %s after it was sent", seen.Round(time.Millisecond))
			if output == "json" {
				var line struct {
					Type  string `json:"type"`
					Event string `json:"event"`
					Pod   string `json:"pod"`
					Call  struct {
						Method       string `json:"method"`
						AgeMs        int64  `json:"age_ms"`
						DeadlineMs   int64  `json:"deadline_ms"`
						DeadlineFrom string `json:"deadline_from"`
						State        string `json:"state"`
						Name         string `json:"name"`
					} `json:"call"`
					Calls []json.RawMessage `json:"calls"`
				}
				for _, l := range strings.Split(out.String(), "\n") {
					if want.MatchString(l) {
						if err := json.Unmarshal([]byte(l), &line); err != nil {
							t.Fatal(err)
						}
						break
					}
				}
				c := line.Call
				if line.Type != "stuck" || line.Pod != "default/web" || c.AgeMs < 500 || c.AgeMs > 1000 || c.DeadlineFrom != "call" ||
					c.DeadlineMs < 2900 || c.DeadlineMs > 3000 || c.State != "open" || c.Name != "web_default_uid-web_0" || len(line.Calls) != 1 {
					t.Errorf("stuck line %+v, want RunPodSandbox open 0.5–1 s, the call's deadline 3 s, its sandbox name", line)
				}
			}
			if err := <-errc; status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("the first call: %v, want the kubelet's deadline", err)
			}
			// The kubelet's retry: attempt 0 again (no sandbox was made).
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			_, err = rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			cancel()
			if err == nil || !strings.Contains(err.Error(), "is reserved") {
				t.Fatalf("the retry: %v, want name is reserved", err)
			}
			wants := []string{"the kubelet gave up after 3.0s", "RunPodSandbox reused the name of RunPodSandbox #1", "which is the cause"}
			if output == "json" {
				wants[0] = `"event":"gave-up"`
			}
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				ok := true
				for _, w := range wants {
					ok = ok && strings.Contains(out.String(), w)
				}
				if ok {
					break
				}
			}
			for _, w := range wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the output has no %q:\n%s", w, out.String())
				}
			}
			if testing.Verbose() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}

// TestProxyStuckPage: the live page (--serve) shows the hung call in its
// "In flight" box within 1 s of the kubelet sending it, its age ticking
// each second before the kubelet's deadline, in a real browser.
func TestProxyStuckPage(t *testing.T) {
	dir, err := os.MkdirTemp("", "pxp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	upstream := startHungRuntime(t, dir)
	sock := filepath.Join(dir, "p.sock")
	out := &lockedBuffer{}
	_, stop := startProxy(t, bin, sock, upstream, out, "-o", "json", "--serve", "127.0.0.1:0")
	t.Cleanup(stop)
	const at = "live page at "
	var url string
	for deadline := time.Now().Add(5 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if i := strings.Index(out.String(), at); i >= 0 {
			url, _, _ = strings.Cut(out.String()[i+len(at):], " ")
		}
	}
	if url == "" {
		t.Fatalf("no live page address:\n%s", out.String())
	}
	b := livetest.Start(t)
	b.Open(t, url)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"},
		Labels: map[string]string{"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "uid-web"}}
	sent := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	}()
	var first string
	for time.Since(sent) < 3*time.Second {
		if first = b.Text(t, "stuck-calls"); strings.Contains(first, "RunPodSandbox #1") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	seen := time.Since(sent)
	if !strings.Contains(first, "RunPodSandbox #1") || seen > time.Second {
		t.Fatalf("the page showed %q after %s, want the hung call within 1 s", first, seen)
	}
	t.Logf("the page named the hung call %s after it was sent: %s", seen.Round(time.Millisecond), first)
	time.Sleep(1100 * time.Millisecond)
	second := b.Text(t, "stuck-calls")
	for _, s := range []string{first, second} {
		if !strings.Contains(s, "no answer") || !strings.Contains(s, "the kubelet gives up at 5.0s") {
			t.Errorf("the page's in-flight box %q, want the call, no answer, the kubelet's 5 s deadline", s)
		}
	}
	if first == second {
		t.Errorf("the age did not tick in 1.1 s: %q", second)
	}
}
