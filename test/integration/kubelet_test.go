//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/test/internal/testenv"
)

// TestKubeletThroughProxy runs a real kubelet v1.37.0 against the harness
// containerd through `podstep proxy`, and checks that what podstep shows is
// what the kubelet did: static pods (hello, init, a postStart hook, a
// failing init container) become podstep's steps and stages, and their
// recordings replay; --hold holds RunPodSandbox until released and the
// kubelet goes on; a method podstep does not know passes; the proxy
// stopped and restarted mid-pod says what it missed and the kubelet
// recovers; removing the manifests removes the pods, and nothing is left.
//
// The kubelet kills sandboxes it does not know that carry its labels, as
// podstep's own pods do: no other test's pods may run meanwhile (the
// suite's tests run one at a time), and it is stopped, and its pods
// removed, before the test ends.
func TestKubeletThroughProxy(t *testing.T) {
	e := setup(t)
	bin, port, healthz := kubeletEnv(t)
	c := dialCRI(t, e.endpoint)
	dir, err := os.MkdirTemp("", "podstep-kubelet")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "cri.sock")

	// The kubelet asks the runtime's Version as it starts: a proxy must be
	// there. This one follows every pod; there are none yet.
	first := e.startProxy(t, sock)
	k := startKubelet(t, bin, dir, sock, port, healthz)
	t.Cleanup(func() {
		k.stop(t)
		if t.Failed() {
			keep := filepath.Join(os.TempDir(), "podstep-kubelet-"+time.Now().Format("150405")+".log")
			if b, err := os.ReadFile(k.logFile); err == nil && os.WriteFile(keep, b, 0o644) == nil {
				t.Logf("the kubelet's log is kept in %s", keep)
			}
		}
		if left := removeKubeletPods(t, c); len(left) > 0 {
			t.Errorf("the kubelet's pods were still there at the end (removed now): %v", left)
		}
		unmountKubelet(t, dir)
		for _, m := range testenv.MountsUnder(dir) {
			t.Errorf("mount left under the kubelet's dir: %s", m)
		}
		os.RemoveAll(dir)
	})
	time.Sleep(2 * time.Second) // a PLEG relist or two: node-level polling
	if code := first.stop(t); code != 0 {
		t.Fatalf("proxy exit %d\n%s", code, first)
	}
	if first.polling["Version"] == 0 || first.polling["ListPodSandbox"] == 0 || len(first.steps) != 0 {
		t.Errorf("before any pod: want node-level polling counted (Version, ListPodSandbox) and no step, got polling %v\n%s", first.polling, first)
	}

	pods := map[string]string{} // pod name → its UID, for the end

	t.Run("hello", func(t *testing.T) {
		name := "hello-" + kubeletNode
		rec := filepath.Join(dir, "hello.rec")
		p := e.startProxy(t, sock, "--pod", "default/"+name, "--record", rec)
		p.waitCalled(t, 30*time.Second)
		k.drop(t, e, "hello.yaml", "hello")
		start := p.waitStep(t, k, "start/hello", 60*time.Second, stepNamed("start/hello"))
		time.Sleep(1500 * time.Millisecond) // the relist after the start
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		want := []string{"run-sandbox", "sandbox-status", "pull/hello", "create/hello", "start/hello"}
		if got := p.names(); !inOrder(got, want) {
			t.Errorf("steps %q, want in order %q\n%s", got, want, p)
		}
		for _, s := range p.steps {
			if s.State != "done" {
				t.Errorf("step %s: %s, want done\n%s", s.Name, s.State, p)
			}
		}
		if start.Pod == nil || start.Pod.Display != "Running" {
			t.Errorf("after start/hello the pod is %+v, want Running", start.Pod)
		}
		// What the proxy says was created is what runs in the runtime.
		ct := podContainer(t, c, name, "hello")
		create := p.stepNamed("create/hello")
		if ct == nil || create == nil || !strings.Contains(string(create.Calls[0].Response), ct.Id) {
			t.Errorf("running container %v, create/hello step %+v: the IDs differ", ct, create)
		}
		if ct != nil {
			pods[name] = ct.Labels["io.kubernetes.pod.uid"]
		}
		if p.summary == nil || p.summary.Pod != "default/"+name || p.summary.Display != "Running" {
			t.Errorf("summary %+v", p.summary)
		}
		if got, want := e.replayNames(t, rec), p.names(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("replay steps %q, live %q", got, want)
		}
	})

	t.Run("init", func(t *testing.T) {
		name := "init-" + kubeletNode
		rec := filepath.Join(dir, "init.rec.gz")
		p := e.startProxy(t, sock, "--pod", "default/"+name, "--record", rec)
		p.waitCalled(t, 30*time.Second)
		k.drop(t, e, "init.yaml", "init")
		p.waitStep(t, k, "start/main", 60*time.Second, stepNamed("start/main"))
		time.Sleep(1500 * time.Millisecond)
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		want := []string{"run-sandbox", "sandbox-status", "pull/setup", "create/setup", "start/setup", "relist", "pull/main", "create/main", "start/main"}
		if got := p.names(); !inOrder(got, want) {
			t.Errorf("steps %q, want in order %q\n%s", got, want, p)
		}
		// The relist that saw the init container exit, and the main
		// container created only after it (the reference trace's order).
		exited := -1
		for i, s := range p.steps {
			if s.Name == "relist" && strings.Contains(s.Summary, "setup exited 0") && exited < 0 {
				exited = i
			}
			if s.Name == "create/main" && (exited < 0 || i < exited) {
				t.Errorf("create/main (step %d) before a relist saw setup exit 0\n%s", s.ID, p)
			}
			if s.Name == "create/main" && s.Stage != "containers" {
				t.Errorf("create/main in stage %s, want containers", s.Stage)
			}
		}
		if exited < 0 {
			t.Errorf("no relist saw setup exit 0\n%s", p)
		}
		if podContainer(t, c, name, "main") == nil {
			t.Errorf("main is not running in the runtime")
		}
		if p.summary == nil || p.summary.Display != "Running" {
			t.Errorf("summary %+v", p.summary)
		} else {
			pods[name] = p.summary.UID
			if len(p.summary.Status.InitContainerStatuses) != 1 || p.summary.Status.InitContainerStatuses[0].Name != "setup" {
				t.Errorf("summary: setup is not an init container: %+v", p.summary.Status.InitContainerStatuses)
			}
		}
		if got, want := e.replayNames(t, rec), p.names(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("replay steps %q, live %q", got, want)
		}
		if out := os.Getenv("PODSTEP_KEEP_KUBELET_RECORDING"); out != "" {
			b, err := os.ReadFile(rec)
			if err == nil {
				err = os.WriteFile(out, b, 0o644)
			}
			if err != nil {
				t.Errorf("PODSTEP_KEEP_KUBELET_RECORDING: %v", err)
			}
		}
	})

	// The proxy reads the static pod's manifest (--manifest: the kubelet's
	// staticPodPath): the init container and the sidecar are staged init
	// from their first call, as printed (without the spec, setup's create
	// and start steps are printed under containers, and the sidecar, which
	// never exits, stays there).
	t.Run("spec from --manifest", func(t *testing.T) {
		name := "specinit-" + kubeletNode
		p := e.startProxy(t, sock, "--pod", "default/"+name, "--manifest", k.manifests)
		p.waitCalled(t, 30*time.Second)
		k.drop(t, e, "specinit.yaml", "specinit")
		p.waitStep(t, k, "start/main", 60*time.Second, stepNamed("start/main"))
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		want := map[string]string{"pull/setup": "init", "create/setup": "init", "start/setup": "init",
			"pull/sidecar": "init", "create/sidecar": "init", "start/sidecar": "init",
			"pull/main": "containers", "create/main": "containers", "start/main": "containers"}
		for name, stage := range want {
			s := p.stepNamed(name)
			if s == nil || s.Stage != stage {
				t.Errorf("step %s: %+v, want stage %s\n%s", name, s, stage, p)
			}
		}
		file := filepath.Join(k.manifests, "specinit.yaml")
		if s := p.stepNamed("create/sidecar"); s != nil {
			if v, _ := s.detailValue("init"); v != "spec.initContainers[1], a sidecar (restartPolicy Always)" {
				t.Errorf("create/sidecar init detail %q", v)
			}
			if v, _ := s.detailValue("spec"); v != "the manifest "+file {
				t.Errorf("create/sidecar spec detail %q, want the manifest %s", v, file)
			}
			if v, _ := s.detailValue("spec vs sent"); !strings.Contains(v, "/dev/termination-log") || !strings.Contains(v, "restartPolicy: Always") {
				t.Errorf("create/sidecar spec vs sent %q: want the kubelet's termination log mount and the sidecar's restartPolicy", v)
			}
		}
		p.mu.Lock()
		spec := false
		for _, l := range p.raw {
			spec = spec || strings.Contains(l, `"type":"spec"`) && strings.Contains(l, `"from":"the manifest `+file+`"`)
		}
		stderr := p.stderr.String()
		p.mu.Unlock()
		if !spec || !strings.Contains(stderr, "spec from the manifest "+file) {
			t.Errorf("no spec line naming %s (stdout and stderr)\n%s", file, p)
		}
		if p.summary == nil {
			t.Errorf("no summary\n%s", p)
		} else {
			pods[name] = p.summary.UID
			var inits []string
			for _, s := range p.summary.Status.InitContainerStatuses {
				inits = append(inits, s.Name)
			}
			if strings.Join(inits, ",") != "setup,sidecar" {
				t.Errorf("summary's init containers %q, want setup,sidecar", inits)
			}
		}
	})

	t.Run("postStart", func(t *testing.T) {
		name := "poststart-" + kubeletNode
		p := e.startProxy(t, sock, "--pod", "default/"+name)
		p.waitCalled(t, 30*time.Second)
		k.drop(t, e, "poststart.yaml", "poststart")
		hook := p.waitStep(t, k, "post-start/app", 60*time.Second, stepNamed("post-start/app"))
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		if !inOrder(p.names(), []string{"create/app", "start/app", "post-start/app"}) {
			t.Errorf("steps %q\n%s", p.names(), p)
		}
		if v, _ := hook.detailValue("exit code"); v != "0" || hook.Stage != "post-start" {
			t.Errorf("post-start/app: stage %s, exit code %q, want post-start and 0: %+v", hook.Stage, v, hook)
		}
		if v, _ := hook.detailValue("stdout"); v != "hook-ran" {
			t.Errorf("post-start/app stdout %q, want hook-ran", v)
		}
		if ct := podContainer(t, c, name, "app"); ct == nil {
			t.Error("app is not running")
		} else {
			pods[name] = ct.Labels["io.kubernetes.pod.uid"]
			if got := c.exec(t, ct.Id, "cat", "/tmp/hooked"); strings.TrimSpace(got) != "hooked" {
				t.Errorf("the hook's file holds %q", got)
			}
		}
	})

	t.Run("failing init container", func(t *testing.T) {
		name := "initfail-" + kubeletNode
		p := e.startProxy(t, sock, "--pod", "default/"+name)
		p.waitCalled(t, 30*time.Second)
		k.drop(t, e, "initfail.yaml", "initfail")
		p.waitStep(t, k, "a relist that saw setup exit 3", 60*time.Second, func(s proxyStep) bool {
			return s.Name == "relist" && strings.Contains(s.Summary, "setup exited 3")
		})
		// The kubelet restarts it after its back-off (10 s).
		p.waitStep(t, k, "create/setup attempt 1", 40*time.Second, func(s proxyStep) bool {
			return s.Name == "create/setup" && strings.Contains(s.Summary, "attempt 1")
		})
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		for _, s := range p.names() {
			if strings.HasSuffix(s, "/main") {
				t.Errorf("step %s: main must not be touched while its init container fails\n%s", s, p)
			}
		}
		if cs := c.containers(t, map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.container.name": "main"}); len(cs) != 0 {
			t.Errorf("the runtime has main containers: %v", cs)
		}
		if p.summary != nil {
			pods[name] = p.summary.UID
		}
	})

	t.Run("hold", func(t *testing.T) {
		name := "held-" + kubeletNode
		p := heldAtSandbox(t, e, k, sock, "held")
		time.Sleep(time.Second)
		if sb := sandboxesNamed(t, c, name); len(sb) != 0 {
			t.Fatalf("a sandbox exists while RunPodSandbox is held: %v\n%s", sb, p)
		}
		if len(p.steps) != 0 {
			t.Errorf("steps finished while RunPodSandbox was held\n%s", p)
		}
		if _, err := p.stdin.Write([]byte("\n")); err != nil { // let RunPodSandbox go
			t.Fatalf("the proxy's stdin: %v\n%s", err, p)
		}
		p.waitHeld(t, k, "PodSandboxStatus", 30*time.Second)
		if sb := sandboxesNamed(t, c, name); len(sb) != 1 {
			t.Errorf("after the release: %d sandboxes, want 1", len(sb))
		}
		if _, err := p.stdin.Write([]byte("c\n")); err != nil { // continue: the rest of the sandbox stage
			t.Fatalf("the proxy's stdin: %v\n%s", err, p)
		}
		p.waitStep(t, k, "start/hello", 60*time.Second, stepNamed("start/hello"))
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		if rs := p.stepNamed("run-sandbox"); rs == nil || rs.State != "done" {
			t.Errorf("run-sandbox: %+v", rs)
		}
		if ct := podContainer(t, c, name, "hello"); ct == nil {
			t.Error("the kubelet did not go on: hello is not running")
		} else {
			pods[name] = ct.Labels["io.kubernetes.pod.uid"]
		}
	})

	t.Run("hold in the TUI", func(t *testing.T) {
		name := "tuiheld-" + kubeletNode
		tui := startTUI(t, "podstep-proxy-tui", 160, 45, e.bin, "proxy", "--listen", "unix://"+sock, "--upstream", e.endpoint,
			"--pod", "default/"+name, "--hold", "--hold-stage", "sandbox", "--no-color")
		tui.waitFor("the proxy waiting for the pod", func(f string) bool { return strings.Contains(f, "waiting for the kubelet to create pod") })
		time.Sleep(2 * time.Second) // the kubelet reconnects
		k.drop(t, e, "hello.yaml", "tuiheld")
		f := tui.waitFor("RunPodSandbox held", func(f string) bool { return strings.Contains(f, "RunPodSandbox: HELD") })
		if !strings.Contains(f, "the kubelet gives up in") || !strings.Contains(f, "RunPodSandbox request (will send)") {
			t.Errorf("the held call and its deadline are not shown:\n%s", f)
		}
		time.Sleep(time.Second)
		if sb := sandboxesNamed(t, c, name); len(sb) != 0 {
			t.Fatalf("a sandbox exists while RunPodSandbox is held: %v", sb)
		}
		tui.key("n")
		tui.waitFor("PodSandboxStatus held", func(f string) bool { return strings.Contains(f, "PodSandboxStatus: HELD") })
		if sb := sandboxesNamed(t, c, name); len(sb) != 1 {
			t.Errorf("after n: %d sandboxes, want 1", len(sb))
		}
		tui.key("c")
		done := regexp.MustCompile(`✓\s+\d+ start/hello`)
		tui.waitFor("start/hello done", func(f string) bool { return done.MatchString(f) })
		if ct := podContainer(t, c, name, "hello"); ct == nil {
			t.Error("the kubelet did not go on: hello is not running")
		} else {
			pods[name] = ct.Labels["io.kubernetes.pod.uid"]
		}
		tui.key("q")
		tui.waitFor("the quit prompt", func(f string) bool { return strings.Contains(f, "tear the pod down?") })
		tui.key("Enter")
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if b, err := os.ReadFile(tui.done); err == nil {
				if code := strings.TrimSpace(string(b)); code != "0" {
					t.Errorf("podstep proxy exited %s, want 0:\n%s", code, tui.capture())
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("podstep proxy did not exit after q:\n%s", tui.capture())
			}
		}
	})

	t.Run("unknown method passes", func(t *testing.T) {
		p := e.startProxy(t, sock, "--pod", "default/nothing")
		call := func(target string) error {
			conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return conn.Invoke(ctx, "/runtime.v1.RuntimeService/PodstepNoSuchMethod", &runtimeapi.VersionRequest{Version: "x"}, &runtimeapi.VersionResponse{})
		}
		direct, via := call(e.endpoint), call("unix://"+sock)
		if via == nil || status.Code(via) != status.Code(direct) || status.Convert(via).Message() != status.Convert(direct).Message() {
			t.Errorf("through the proxy: %v; directly: %v (want the same code and message)", via, direct)
		}
		t.Logf("the runtime's answer, through the proxy as directly: %v", via)
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		if p.polling["PodstepNoSuchMethod"] != 1 {
			t.Errorf("polling %v: want PodstepNoSuchMethod ×1 counted", p.polling)
		}
	})

	t.Run("proxy restarted mid-pod", func(t *testing.T) {
		name := "slowinit-" + kubeletNode
		a := e.startProxy(t, sock, "--pod", "default/"+name)
		a.waitCalled(t, 30*time.Second)
		k.drop(t, e, "slowinit.yaml", "slowinit")
		a.waitStep(t, k, "start/setup", 60*time.Second, stepNamed("start/setup"))
		if code := a.stop(t); code != 0 {
			t.Fatalf("first proxy exit %d\n%s", code, a)
		}
		if a.summary == nil || a.summary.Outcome == "removed" {
			t.Errorf("first proxy's summary: %+v", a.summary)
		}
		time.Sleep(time.Second) // the kubelet's calls fail meanwhile
		rec := filepath.Join(dir, "slowinit.rec")
		b := e.startProxy(t, sock, "--pod", "default/"+name, "--record", rec)
		joined := b.waitStep(t, k, "joined late", 30*time.Second, func(s proxyStep) bool { return strings.HasPrefix(s.Summary, "joined late") })
		if !strings.Contains(strings.Join(joined.Warnings, " "), "missed: sandbox") {
			t.Errorf("joined-late step warnings %q: want what was missed", joined.Warnings)
		}
		b.waitStep(t, k, "start/main", 60*time.Second, stepNamed("start/main"))
		if code := b.stop(t); code != 0 {
			t.Fatalf("second proxy exit %d\n%s", code, b)
		}
		if ct := podContainer(t, c, name, "main"); ct == nil {
			t.Error("the kubelet did not recover: main is not running")
		} else {
			pods[name] = ct.Labels["io.kubernetes.pod.uid"]
		}
		if got := e.replayNames(t, rec); len(got) == 0 || got[len(got)-1] == "" {
			t.Errorf("replay of the second proxy's recording: %q", got)
		}
	})

	// A sandbox stopped behind the kubelet's back (as a runtime restart or
	// a lost network does): its PLEG relist sees it not ready, and
	// computePodActions (pkg/kubelet/kuberuntime/kuberuntime_manager.go)
	// says SandboxChanged: the kubelet kills the pod and sends RunPodSandbox
	// again, attempt 1. Held there, that call is the pod's second sandbox
	// try, and the proxy says why the first one gave none.
	t.Run("sandbox changed", func(t *testing.T) {
		name := "changed-" + kubeletNode
		p := heldAtSandbox(t, e, k, sock, "changed")
		if _, err := p.stdin.Write([]byte("c\n")); err != nil { // the whole sandbox stage
			t.Fatalf("the proxy's stdin: %v\n%s", err, p)
		}
		p.waitStep(t, k, "start/hello", 60*time.Second, stepNamed("start/hello"))
		var first *runtimeapi.PodSandbox
		for _, sb := range kubeletSandboxes(t, c) {
			if sb.Metadata.Name == name {
				first = sb
			}
		}
		if first == nil || first.Metadata.Attempt != 0 {
			t.Fatalf("the pod's sandbox: %+v, want one of attempt 0", first)
		}
		// (containerd stops the sandbox's container, then tears its network
		// down; under load that can fail, "failed to delete eth0: no such
		// device", with the sandbox already not ready, which is all the
		// kubelet's relist needs: try again only while it is ready.)
		for try := 1; ; try++ {
			_, err := c.rt.StopPodSandbox(ctx10(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: first.Id})
			if err == nil {
				break
			}
			st, serr := c.rt.PodSandboxStatus(ctx10(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: first.Id})
			if serr == nil && st.GetStatus().GetState() == runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Logf("stop the sandbox behind the kubelet: %v; it is not ready, which the kubelet's relist sees", err)
				break
			}
			if try == 5 {
				t.Fatalf("stop the sandbox behind the kubelet: %v", err)
			}
			time.Sleep(time.Second)
		}
		// The kubelet's calls until its new RunPodSandbox: what else of the
		// stage is held (its KillPod's) goes one at a time.
		released := 0
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			p.mu.Lock()
			held := append([]heldLine(nil), p.held...)
			p.mu.Unlock()
			runs := 0
			for _, h := range held {
				if h.Method == "RunPodSandbox" {
					runs++
				}
			}
			if runs >= 2 {
				break
			}
			if len(held) > 1+released {
				released++
				if _, err := p.stdin.Write([]byte("\n")); err != nil {
					t.Fatalf("the proxy's stdin: %v\n%s", err, p)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no second RunPodSandbox held within 60s of the sandbox's stop\n%s\n%s", p, k.logTail(30))
			}
		}
		out, missing := p.waitOutput(10*time.Second, `"event":"slow"`, `"method":"RunPodSandbox"`, `"attempt":1`, `"try":2`,
			`"previous":"sandbox `+first.Id[:13]+` is not ready (SandboxChanged`)
		for _, w := range missing {
			t.Errorf("the proxy's output lacks %s", w)
		}
		if len(missing) > 0 {
			t.Logf("the proxy's output:\n%s", out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, `"try":2`) {
				t.Logf("the proxy: %s", l)
				break
			}
		}
		if _, err := p.stdin.Write([]byte("c\n")); err != nil {
			t.Fatalf("the proxy's stdin: %v\n%s", err, p)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			var now *runtimeapi.PodSandbox
			for _, sb := range kubeletSandboxes(t, c) {
				if sb.Metadata.Name == name && sb.Metadata.Attempt == 1 && sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
					now = sb
				}
			}
			if now != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no ready sandbox of attempt 1 within 60s: %v\n%s", sandboxesNamed(t, c, name), k.logTail(30))
			}
		}
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		pods[name] = first.Metadata.Uid
	})

	t.Run("nothing left", func(t *testing.T) {
		p := e.startProxy(t, sock)
		entries, _ := os.ReadDir(k.manifests)
		for _, en := range entries {
			os.Remove(filepath.Join(k.manifests, en.Name()))
		}
		// The kubelet stops the pods at once; its garbage collector (every
		// minute) removes them.
		deadline := time.Now().Add(100 * time.Second)
		for len(kubeletSandboxes(t, c)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the kubelet's sandboxes are still there 100s after their manifests went: %v\n%s", kubeletSandboxes(t, c), k.logTail(30))
			}
			time.Sleep(time.Second)
		}
		if code := p.stop(t); code != 0 {
			t.Fatalf("proxy exit %d\n%s", code, p)
		}
		removed := 0
		for _, s := range p.steps {
			if s.Name == "remove-sandbox" && s.State == "done" {
				removed++
			}
		}
		if removed < len(pods) {
			t.Errorf("the proxy saw %d RemovePodSandbox steps, want one for each of %d pods\n%s", removed, len(pods), p)
		}
		k.stop(t)
		select {
		case err := <-k.exited:
			t.Logf("the kubelet exited: %v", err)
		default:
		}
		if k.cmd.ProcessState == nil {
			t.Error("the kubelet is still running")
		}
		// Its own bind mount of its root dir (the kubelet leaves it); the
		// pods left none.
		for _, m := range testenv.MountsUnder(dir) {
			if m != k.root {
				t.Errorf("mount left: %s", m)
			}
		}
		unmountKubelet(t, dir)
		for name, uid := range pods {
			if uid == "" {
				continue
			}
			logs := "/var/log/pods/default_" + name + "_" + uid
			if _, err := os.Stat(logs); err == nil {
				// The kubelet removes a pod's log dir with its containers' GC;
				// one that is still there is podstep's test's to clean.
				t.Logf("removing the kubelet's log dir %s", logs)
				os.RemoveAll(logs)
			}
		}
	})
}

// stepNamed is the first step with this name.
func (p *proxyRun) stepNamed(name string) *proxyStep {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.steps {
		if p.steps[i].Name == name {
			return &p.steps[i]
		}
	}
	return nil
}

// waitHeld waits for a held line of method.
// heldAtSandbox starts a proxy on sock that follows the pod default/NAME-NODE
// (hello.yaml's pod, renamed by drop) and holds its sandbox stage, gives the
// kubelet the pod, and returns once its RunPodSandbox is held.
func heldAtSandbox(t *testing.T, e *env, k *kubelet, sock, name string) *proxyRun {
	t.Helper()
	p := e.startProxy(t, sock, "--pod", "default/"+name+"-"+kubeletNode, "--hold", "--hold-stage", "sandbox")
	p.waitCalled(t, 30*time.Second)
	k.drop(t, e, "hello.yaml", name)
	p.waitHeld(t, k, "RunPodSandbox", 60*time.Second)
	return p
}

func (p *proxyRun) waitHeld(t *testing.T, k *kubelet, method string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		p.mu.Lock()
		for _, h := range p.held {
			if h.Method == method {
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%s not held within %s\n%s\n%s", method, d, p, k.logTail(30))
		}
	}
}

// sandboxesNamed lists the runtime's sandboxes of a pod.
func sandboxesNamed(t *testing.T, c *criClient, name string) []string {
	var out []string
	for _, s := range kubeletSandboxes(t, c) {
		if s.Metadata.Name == name {
			out = append(out, s.Id[:13]+" "+s.State.String())
		}
	}
	return out
}
