//go:build integration

package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/test/internal/testenv"
)

// TestInfo: `podstep info -r ENDPOINT` exits 0 and prints containerd's
// version, every condition of CRI Status, and the cgroup driver, per runtime:
// containerd 2.x answers RuntimeConfig (the driver is shown) and, on cgroup
// v1, adds a false ContainerdHasNoDeprecationWarnings condition, which must
// not make info fail (only RuntimeReady and NetworkReady count, as in the
// kubelet's Kubelet.updateRuntimeUp, pkg/kubelet/kubelet.go); containerd 1.6
// answers RuntimeConfig with Unimplemented (the driver is "not reported").
func TestInfo(t *testing.T) {
	e := setup(t)
	c := dialCRI(t, e.endpoint)
	v := c.version(t)
	f := runtimeFactsOf(t, c, e.rt)
	r := e.podstep(t, "info", "-r", e.endpoint)
	if r.code != 0 {
		t.Fatalf("want exit 0\n%s", r)
	}
	wants := []string{e.endpoint, fmt.Sprintf("runtime:       %s %s (CRI %s)\n", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)}
	for _, cond := range f.status.GetStatus().GetConditions() {
		wants = append(wants, fmt.Sprintf("condition:     %s=%t ", cond.Type, cond.Status))
	}
	if f.driver != "" {
		wants = append(wants, "cgroup driver: "+f.driver+"\n")
	} else {
		wants = append(wants, "cgroup driver: not reported (RuntimeConfig unimplemented); podstep uses --cgroup-driver\n")
	}
	for _, want := range wants {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("podstep info output lacks %q\n%s", want, r)
		}
	}
	for _, want := range []string{"RuntimeReady=true", "NetworkReady=true"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("podstep info output lacks %q (the harness's runtime is ready)\n%s", want, r)
		}
	}
}

// criLogLine is the CRI log format: <RFC3339Nano> <stream> <P|F> <text>.
var criLogLine = regexp.MustCompile(`^(\S+) (stdout|stderr) (F|P) (.*)$`)

// waitForLog waits until the container log file holds a line with text and
// returns that parsed line.
func waitForLog(t *testing.T, path, text string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var data []byte
	var err error
	for {
		data, err = os.ReadFile(path)
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if m := criLogLine.FindStringSubmatch(line); len(m) == 5 && m[4] == text {
					return m
				}
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("container log %s: no line `<time> stdout F %s` after 10s (read error: %v)\ncontent: %q\nlog dir: %v", path, text, err, data, tree(filepath.Dir(filepath.Dir(path))))
	return nil
}

// TestHello: the hello pod runs, gets an IP in the harness subnet, and its
// container log (CRI format) says hello.
func TestHello(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	r := e.mustRun(t, d, e.pod("hello"), "--keep")
	s := r.summary
	if s.Display != "Running" {
		t.Errorf("summary.display = %q, want Running", s.Display)
	}
	if s.Ready != "1/1" {
		t.Errorf("summary.ready = %q, want 1/1", s.Ready)
	}
	if !s.Kept {
		t.Errorf("summary.kept = false with --keep")
	}
	if s.Status.Phase != "Running" {
		t.Errorf("summary.status.phase = %q, want Running", s.Status.Phase)
	}

	t.Run("pod IP in CNI subnet", func(t *testing.T) {
		_, subnet, err := net.ParseCIDR(e.subnet)
		if err != nil {
			t.Fatalf("PODSTEP_CNI_SUBNET %q: %v", e.subnet, err)
		}
		ip := net.ParseIP(s.PodIP)
		if ip == nil || !subnet.Contains(ip) {
			t.Errorf("summary.pod_ip = %q, want an address in %s", s.PodIP, subnet)
		}
		if s.Status.PodIP != s.PodIP {
			t.Errorf("summary.status.podIP = %q, summary.pod_ip = %q", s.Status.PodIP, s.PodIP)
		}
		// the runtime agrees
		c := dialCRI(t, e.endpoint)
		sb := c.managedSandboxes(t)
		if len(sb) != 1 {
			t.Fatalf("want 1 managed sandbox, have %d", len(sb))
		}
		st, err := c.rt.PodSandboxStatus(ctx10(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb[0].Id})
		if err != nil {
			t.Fatalf("PodSandboxStatus: %v", err)
		}
		if got := st.Status.GetNetwork().GetIp(); got != s.PodIP {
			t.Errorf("runtime says sandbox IP %q, podstep said %q", got, s.PodIP)
		}
	})

	t.Run("container log", func(t *testing.T) {
		path := filepath.Join(d.podLogDir("default", "hello", s.UID), "hello", "0.log")
		m := waitForLog(t, path, "hello from podstep")
		if m[2] != "stdout" || m[3] != "F" {
			t.Errorf("log line stream/tag = %s %s, want stdout F", m[2], m[3])
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Errorf("log line timestamp %q is not RFC3339Nano: %v", m[1], err)
		} else if age := time.Since(ts); age < -time.Minute || age > 5*time.Minute {
			t.Errorf("log line timestamp %s is %s away from now", ts, age)
		}
	})

	e.cleanup(t)
	e.assertNothingLeft(t, d, "default", "hello", s.UID)
}

// TestInitContainerSharesEmptyDir: init.yaml's init container writes
// /work/ready into the emptyDir; the app container sees it.
func TestInitContainerSharesEmptyDir(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	r := e.mustRun(t, d, e.pod("init"), "--keep")
	uid := r.summary.UID
	if st := r.step("wait/setup"); st == nil || st.State != "done" {
		t.Errorf("step wait/setup: %+v, want done", st)
	}
	c := dialCRI(t, e.endpoint)
	app := c.running(t, uid, "app")
	if got := strings.TrimSpace(c.exec(t, app.Id, "cat", "/work/ready")); got != "ready" {
		t.Errorf("app: cat /work/ready = %q, want ready", got)
	}
	waitForLog(t, filepath.Join(d.podLogDir("default", "init-demo", uid), "app", "0.log"), "ready")
	// the init container's state in the pod status: terminated with exit code 0
	var found bool
	for _, cs := range r.summary.Status.InitContainerStatuses {
		if cs.Name == "setup" {
			found = true
			if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
				t.Errorf("initContainerStatuses[setup].state = %+v, want terminated with exit code 0", cs.State)
			}
		}
	}
	if !found {
		t.Errorf("summary.status.initContainerStatuses has no setup: %+v", r.summary.Status.InitContainerStatuses)
	}
	e.cleanup(t)
	e.assertNothingLeft(t, d, "default", "init-demo", uid)
}

// TestPostStartHook: hooks.yaml's postStart hook wrote /tmp/poststart in
// container first.
func TestPostStartHook(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	r := e.mustRun(t, d, e.pod("hooks"), "--keep")
	if r.summary.Ready != "2/2" {
		t.Errorf("summary.ready = %q, want 2/2", r.summary.Ready)
	}
	c := dialCRI(t, e.endpoint)
	first := c.running(t, r.summary.UID, "first")
	if got := strings.TrimSpace(c.exec(t, first.Id, "cat", "/tmp/poststart")); got != "started" {
		t.Errorf("first: cat /tmp/poststart = %q, want started", got)
	}
	// the hook ran in first only
	second := c.running(t, r.summary.UID, "second")
	if out := c.exec(t, second.Id, "sh", "-c", "test -e /tmp/poststart && echo present || echo absent"); strings.TrimSpace(out) != "absent" {
		t.Errorf("second: /tmp/poststart is %s, want absent", strings.TrimSpace(out))
	}
	e.cleanup(t)
}

// TestEnvUserAndLimits: env.yaml's user, environment and resource limits reach
// the container process.
func TestEnvUserAndLimits(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	r := e.mustRun(t, d, e.pod("env"), "--keep")
	c := dialCRI(t, e.endpoint)
	app := c.running(t, r.summary.UID, "app")

	t.Run("runAsUser", func(t *testing.T) {
		if got := strings.TrimSpace(c.exec(t, app.Id, "id", "-u")); got != "1000" {
			t.Errorf("id -u = %q, want 1000", got)
		}
	})
	t.Run("env", func(t *testing.T) {
		out := c.exec(t, app.Id, "env")
		vars := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				vars[k] = v
			}
		}
		for k, want := range map[string]string{
			"MODE":     "debug",                  // literal
			"POD_NAME": "env-demo",               // fieldRef metadata.name
			"GREETING": "hello from a ConfigMap", // configMapKeyRef
		} {
			if got, ok := vars[k]; !ok || got != want {
				t.Errorf("env %s = %q (set: %t), want %q", k, got, ok, want)
			}
		}
		// $(VAR) expansion in args, as printed by the container itself
		waitForLog(t, filepath.Join(d.podLogDir("default", "env-demo", r.summary.UID), "app", "0.log"),
			"hello from a ConfigMap from env-demo in debug mode")
	})
	t.Run("cgroup limits", func(t *testing.T) {
		cg := parseProcCgroup(c.exec(t, app.Id, "cat", "/proc/self/cgroup"))
		if p, ok := cg["memory"]; ok { // cgroup v1
			if got := readCgroupInt(t, "memory", p, "memory.limit_in_bytes"); got != 64<<20 {
				t.Errorf("memory.limit_in_bytes = %d, want %d (64Mi)", got, 64<<20)
			}
			cpu := cg["cpu"]
			if got := readCgroupInt(t, "cpu", cpu, "cpu.cfs_period_us"); got != 100000 {
				t.Errorf("cpu.cfs_period_us = %d, want 100000", got)
			}
			if got := readCgroupInt(t, "cpu", cpu, "cpu.cfs_quota_us"); got != 20000 {
				t.Errorf("cpu.cfs_quota_us = %d, want 20000 (200m)", got)
			}
			// requests.cpu 100m → cpu.shares 102 (the kubelet's MilliCPUToShares)
			if got := readCgroupInt(t, "cpu", cpu, "cpu.shares"); got != 102 {
				t.Errorf("cpu.shares = %d, want 102 (100m)", got)
			}
		} else if p, ok := cg[""]; ok { // cgroup v2
			if got := strings.TrimSpace(readCgroup(t, "", p, "memory.max")); got != strconv.Itoa(64<<20) {
				t.Errorf("memory.max = %q, want %d", got, 64<<20)
			}
			if got := strings.TrimSpace(readCgroup(t, "", p, "cpu.max")); got != "20000 100000" {
				t.Errorf("cpu.max = %q, want 20000 100000", got)
			}
		} else {
			t.Fatalf("cannot find the container's memory cgroup in %v", cg)
		}
	})
	e.cleanup(t)
}

// parseProcCgroup maps each controller of /proc/PID/cgroup to its path
// ("cpu,cpuacct" gives both "cpu" and "cpuacct"; v2's "0::/x" gives "").
func parseProcCgroup(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			m[""] = parts[2]
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			m[ctl] = parts[2]
		}
	}
	return m
}

// readCgroup reads FILE of the cgroup at PATH of controller CTL on the host.
func readCgroup(t *testing.T, ctl, path, file string) string {
	t.Helper()
	var candidates []string
	if ctl == "" {
		// PATH is absolute ("/kubepods.slice/..."), below the mount.
		candidates = []string{filepath.Join("/sys/fs/cgroup", path, file)} //nolint:gocritic // the mount point, then the cgroup's path
	} else {
		// the controller's hierarchy may be mounted alone or co-mounted (cpu,cpuacct)
		mounts, _ := filepath.Glob("/sys/fs/cgroup/*")
		for _, m := range mounts {
			for _, c := range strings.Split(filepath.Base(m), ",") {
				if c == ctl {
					candidates = append(candidates, filepath.Join(m, path, file))
				}
			}
		}
	}
	for _, f := range candidates {
		if b, err := os.ReadFile(f); err == nil {
			return string(b)
		}
	}
	t.Fatalf("cannot read %s of cgroup %s:%s (tried %v)", file, ctl, path, candidates)
	return ""
}

func readCgroupInt(t *testing.T, ctl, path, file string) int64 {
	t.Helper()
	s := strings.TrimSpace(readCgroup(t, ctl, path, file))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q is not a number", file, s)
	}
	return n
}

// TestHostPort: hostport.yaml's httpd answers on the host's 127.0.0.1:18080,
// and no longer after cleanup.
func TestHostPort(t *testing.T) {
	testenv.HostLock(t) // the host's port 18080
	e := setup(t)
	d := newDirs(t)
	r := e.mustRun(t, d, e.pod("hostport"), "--keep")
	client := &http.Client{Timeout: 2 * time.Second}
	get := func(url string) (string, error) {
		resp, err := client.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return string(b), fmt.Errorf("HTTP %s", resp.Status)
		}
		return string(b), err
	}
	for _, url := range []string{"http://127.0.0.1:18080/index.html", "http://" + r.summary.PodIP + ":8080/index.html"} {
		var body string
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; {
			body, err = get(url)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
		} else if strings.TrimSpace(body) != "hello from podstep" {
			t.Errorf("GET %s = %q, want hello from podstep", url, body)
		}
	}
	e.cleanup(t)
	if body, err := get("http://127.0.0.1:18080/index.html"); err == nil {
		t.Errorf("after cleanup, 127.0.0.1:18080 still answers %q (hostport mapping left behind)", body)
	}
}

// TestInitContainerFails: an init container exiting 3 with restartPolicy
// Never fails the pod at stage init with the runtime's exit code, and
// podstep removes everything.
func TestInitContainerFails(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	r := e.run(t, d, e.local("init-fails"))
	if r.code != 1 {
		t.Fatalf("want exit 1, got %d\n%s", r.code, r)
	}
	f := r.summary.Failure
	if r.summary.Outcome != "failed" || f == nil {
		t.Fatalf("summary outcome %q failure %+v, want failed with a failure\n%s", r.summary.Outcome, f, r)
	}
	if f.Stage != "init" {
		t.Errorf("failure.stage = %q, want init", f.Stage)
	}
	if !regexp.MustCompile(`\bcode 3\b`).MatchString(f.Message) {
		t.Errorf("failure.message = %q, want it to name exit code 3", f.Message)
	}
	// the exit code came from the runtime: ContainerStatus said exit_code 3
	var seen bool
	for _, st := range r.steps {
		for _, c := range st.Calls {
			if c.Method == "ContainerStatus" && strings.Contains(string(c.Response), `"exit_code":3`) {
				seen = true
			}
		}
	}
	if !seen {
		t.Errorf("no ContainerStatus response with \"exit_code\":3 in the JSON calls")
	}
	if !strings.Contains(r.summary.Display, "Init:Error") {
		t.Errorf("summary.display = %q, want Init:Error", r.summary.Display)
	}
	if !strings.Contains(r.stderr, "exited with code 3") {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
	e.assertNothingLeft(t, d, "default", "init-fails", r.summary.UID)
}

// TestImageNeverPull: a missing image with imagePullPolicy Never fails with
// ErrImageNeverPull.
func TestImageNeverPull(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	r := e.run(t, d, e.local("never-pull"))
	if r.code != 1 {
		t.Fatalf("want exit 1, got %d\n%s", r.code, r)
	}
	f := r.summary.Failure
	if f == nil {
		t.Fatalf("no failure in the summary\n%s", r)
	}
	if f.Reason != "ErrImageNeverPull" {
		t.Errorf("failure.reason = %q, want ErrImageNeverPull", f.Reason)
	}
	if f.Stage != "containers" {
		t.Errorf("failure.stage = %q, want containers", f.Stage)
	}
	if !strings.Contains(f.Message, "docker.io/library/doesnotexist:1") {
		t.Errorf("failure.message = %q, want it to name the image", f.Message)
	}
	for _, st := range r.steps {
		for _, c := range st.Calls {
			if c.Method == "PullImage" {
				t.Errorf("step %s sent PullImage with pull policy Never", st.Name)
			}
		}
	}
	e.assertNothingLeft(t, d, "default", "never-pull", r.summary.UID)
}

// TestTeardownLeavesNothing: after a normal run (no --keep) the runtime has no
// podstep sandbox or container and the pod and log dirs are gone.
func TestTeardownLeavesNothing(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	r := e.mustRun(t, d, e.pod("init"))
	if r.summary.Kept {
		t.Errorf("summary.kept = true without --keep")
	}
	if r.summary.Timing.TeardownMs <= 0 {
		t.Errorf("summary.timing.teardown_ms = %v, want > 0", r.summary.Timing.TeardownMs)
	}
	e.assertNothingLeft(t, d, "default", "init-demo", r.summary.UID)
}

// TestInterrupt: SIGINT while podstep waits for a sleeping init container
// tears the pod down and exits 130.
func TestInterrupt(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	args := []string{"run", "--auto", "-o", "json", "-f", e.local("init-sleeps"), "-r", e.endpoint,
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs}
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(runTimeout, func() { _ = cmd.Process.Kill() })
	defer kill.Stop()

	r := &result{args: args}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var sent time.Time
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if err := r.parseLine(sc.Bytes()); err != nil {
			t.Errorf("JSON line %q: %v", sc.Text(), err)
		}
		if sent.IsZero() && len(r.steps) > 0 {
			last := r.steps[len(r.steps)-1]
			if last.Name == "start/nap" && last.State == "done" {
				if err := interrupt(cmd); err != nil {
					t.Fatalf("SIGINT: %v", err)
				}
				sent = time.Now()
			}
		}
	}
	err = cmd.Wait()
	r.stdout, r.stderr = out.String(), stderr.String()
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if sent.IsZero() {
		t.Fatalf("the JSON stream never showed step start/nap done; no SIGINT sent\n%s", r)
	}
	took := time.Since(sent)
	t.Logf("exit %d %s after SIGINT", r.code, took.Round(time.Millisecond))
	if r.code != 130 {
		t.Errorf("exit code %d, want 130\n%s", r.code, r)
	}
	e.checkStream(t, r)
	if r.summary.Outcome != "interrupted" {
		t.Errorf("summary.outcome = %q, want interrupted", r.summary.Outcome)
	}
	if r.summary.Kept {
		t.Errorf("summary.kept = true after an interrupt")
	}
	// podstep stopped waiting for the 5 s init container: it did not run to the end
	if st := r.step("start/app"); st != nil {
		t.Errorf("the app container was started after SIGINT: %+v", st.Summary)
	}
	if took > 4*time.Second {
		t.Errorf("podstep took %s to exit after SIGINT (grace period 0)", took)
	}
	if !strings.Contains(r.stderr, "interrupted") {
		t.Errorf("stderr does not say interrupted: %q", r.stderr)
	}
	e.assertNothingLeft(t, d, "default", "init-sleeps", r.summary.UID)
}

// TestBackToBack: the same manifest twice in a row (same pod UID) works both
// times: teardown releases the sandbox name.
func TestBackToBack(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		file string
		code int
	}{{e.pod("hello"), 0}, {e.local("init-fails"), 1}} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			var uid string
			for i := 1; i <= 2; i++ {
				d := newDirs(t)
				r := e.run(t, d, tc.file)
				if r.code != tc.code {
					t.Fatalf("run %d: exit %d, want %d\n%s", i, r.code, tc.code, r)
				}
				if strings.Contains(r.stdout+r.stderr, "failed to reserve sandbox name") {
					t.Fatalf("run %d: sandbox name still reserved\n%s", i, r)
				}
				if tc.code == 1 && (r.summary.Failure == nil || r.summary.Failure.Stage != "init") {
					t.Fatalf("run %d: want failure at stage init, got %+v", i, r.summary.Failure)
				}
				if uid != "" && r.summary.UID != uid {
					t.Errorf("run %d: pod UID %s, run 1 had %s (same manifest)", i, r.summary.UID, uid)
				}
				uid = r.summary.UID
			}
		})
	}
}

// TestAllPods: every pod in testdata/pods runs (text output, the way a user
// types it).
func TestAllPods(t *testing.T) {
	e := setup(t)
	files, err := filepath.Glob(filepath.Join(e.repo, "testdata", "pods", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pods in testdata/pods (%v)", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			if filepath.Base(f) == "hostport.yaml" {
				testenv.HostLock(t) // the host's port 18080
			}
			d := newDirs(t)
			r := e.podstep(t, "run", "--auto", "-f", f, "-r", e.endpoint, "--grace-period", "0",
				"--root-dir", d.root, "--log-dir", d.logs)
			if why, ok := needsContainerd2[strings.TrimSuffix(filepath.Base(f), ".yaml")]; ok && e.rt.major < 2 {
				t.Logf("%s cannot run this pod (%s): asserting it fails cleanly", e.rt, why)
				if r.code != 1 {
					t.Errorf("want exit 1\n%s", r)
				}
				assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
				return
			}
			if r.code != 0 {
				t.Fatalf("want exit 0\n%s", r)
			}
			if !strings.Contains(r.stdout, "STATUS Running") {
				t.Errorf("no STATUS Running in the output\n%s", r)
			}
			if strings.Contains(r.stdout, "SIMULATED") {
				t.Errorf("ran on the simulated runtime\n%s", r)
			}
			if sb := dialCRI(t, e.endpoint).managedSandboxes(t); len(sb) != 0 {
				t.Errorf("%d podstep sandbox(es) left after the run", len(sb))
			}
			assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
			assertEmptyDir(t, "log dirs", d.logs)
		})
	}
}

// runStreaming starts podstep run -o json and calls onStep for each JSON
// step as it arrives; it returns the finished result.
func (e *env) runStreaming(t *testing.T, d dirs, file string, onStep func(cmd *exec.Cmd, s stepEvent)) *result {
	t.Helper()
	return e.stream(t, d, file, nil, onStep)
}

// TestInterruptDuringSandbox: SIGINT while RunPodSandbox is in flight (0, 50
// and 100 ms after the step before it is reported; RunPodSandbox takes
// ~100-200 ms here). Exit 130 and, when podstep has exited, nothing of the pod
// is left: no sandbox, no pod dir, no log dir, and the sandbox name is free,
// so running the same pod again at once is not refused with "failed to
// reserve sandbox name" (containerd keeps creating, then rolls back, a
// sandbox whose RunPodSandbox the client abandoned).
func TestInterruptDuringSandbox(t *testing.T) {
	e := setup(t)
	for _, delay := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond} {
		t.Run(fmt.Sprintf("after %s", delay), func(t *testing.T) {
			d := newDirs(t)
			var sent bool
			r := e.runStreaming(t, d, e.local("init-sleeps"), func(cmd *exec.Cmd, s stepEvent) {
				if !sent && s.Name == "runtime-status" {
					sent = true
					time.Sleep(delay)
					if err := interrupt(cmd); err != nil {
						t.Errorf("SIGINT: %v", err)
					}
				}
			})
			if !sent {
				t.Fatalf("the JSON stream never showed step runtime-status; no SIGINT sent\n%s", r)
			}
			if rs := r.step("run-sandbox"); rs != nil {
				t.Logf("run-sandbox: %s %s %s", rs.State, rs.Reason, rs.Message)
			} else {
				t.Logf("run-sandbox: not run")
			}
			if r.code != 130 {
				t.Errorf("exit code %d, want 130\n%s", r.code, r)
			}
			e.checkStream(t, r)
			if r.summary.Outcome != "interrupted" {
				t.Errorf("summary.outcome = %q, want interrupted", r.summary.Outcome)
			}
			e.assertNothingLeft(t, d, "default", "init-sleeps", r.summary.UID)

			again := e.run(t, newDirs(t), e.local("init-sleeps"))
			if again.code != 0 {
				t.Errorf("running the same pod right after the interrupted run: exit %d, want 0\n%s", again.code, again)
			}
			if t.Failed() {
				time.Sleep(time.Second) // let containerd finish the abandoned RunPodSandbox
				e.settle(t)
			}
		})
	}
}

// TestRerunWhileKept: running a manifest again while its pod is still kept
// (--keep) must not damage the kept pod. (Whether the second run refuses
// or succeeds, the first pod's containers, data dir and emptyDir content
// stay.)
func TestRerunWhileKept(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	first := e.mustRun(t, d, e.pod("init"), "--keep")
	uid := first.summary.UID

	second := e.run(t, d, e.pod("init"))
	t.Logf("second run: exit %d, outcome %s, failure %+v", second.code, second.summary.Outcome, second.summary.Failure)
	if second.code == 1 {
		f := second.summary.Failure
		if f == nil || !strings.Contains(f.Message+f.Reason, "reserve") && !strings.Contains(strings.ToLower(f.Message), "already") {
			t.Errorf("second run failed without saying the pod already exists: %+v", f)
		}
	} else if second.code != 0 {
		t.Errorf("second run: exit %d, want 0 or 1\n%s", second.code, second)
	}

	c := dialCRI(t, e.endpoint)
	app := c.running(t, uid, "app")
	if got := strings.TrimSpace(c.exec(t, app.Id, "sh", "-c", "cat /work/ready 2>&1; true")); got != "ready" {
		t.Errorf("kept pod: cat /work/ready = %q, want ready (its emptyDir was emptied by the second run)", got)
	}
	for _, p := range []string{
		d.podDir(uid),
		filepath.Join(d.podDir(uid), "volumes", "kubernetes.io~empty-dir", "work", "ready"),
		filepath.Join(d.podDir(uid), "etc-hosts"),
		d.podLogDir("default", "init-demo", uid),
	} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("kept pod's %s is gone after the second run: %v", p, err)
		}
	}
	e.cleanup(t)
	e.assertNothingLeft(t, d, "default", "init-demo", uid)
}
