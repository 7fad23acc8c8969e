//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/test/internal/testenv"
)

// The shadow runtime (issue 37, internal/shadow): `run --shadow=always` on
// the harness runs the pod in a private copy of the harness's containerd,
// leaves the harness's own sandboxes, containers and images as they were,
// and leaves nothing of the copy on the host at the end (processes,
// mounts, links, iptables rules, dirs); nor does a killed run once
// `podstep cleanup` ran.

// nodeState is what the node's runtime holds: every sandbox, container and
// image (podstep's or not), as sorted "id state" lines.
func nodeState(t *testing.T, c *criClient) []string {
	t.Helper()
	ctx := ctx10(t)
	var out []string
	sbs, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sbs.Items {
		out = append(out, "sandbox "+s.Id+" "+s.State.String())
	}
	cs, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ctr := range cs.Containers {
		out = append(out, "container "+ctr.Id+" "+ctr.State.String())
	}
	imgs, err := c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range imgs.Images {
		out = append(out, "image "+i.Id+" "+strings.Join(i.RepoTags, ","))
	}
	slices.Sort(out)
	return out
}

// shadowDir is the shadow's dir from the run's runtime endpoint
// (unix://BASE/ID/run/containerd.sock).
func shadowDir(t *testing.T, endpoint string) string {
	t.Helper()
	sock := strings.TrimPrefix(endpoint, "unix://")
	dir := filepath.Dir(filepath.Dir(sock))
	if !strings.Contains(dir, "shadows/") {
		t.Fatalf("runtime endpoint %q is not a shadow's", endpoint)
	}
	return dir
}

// shadowLeft is everything of the shadow in dir still on the host: a
// process naming its dir, a mount under it, its bridge, an iptables rule of
// its network, the dir itself.
func shadowLeft(t *testing.T, dir string) []string {
	t.Helper()
	id := filepath.Base(dir)
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), dir) {
			left = append(left, "process "+e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	for _, m := range testenv.MountsUnder(dir) {
		left = append(left, "mount "+m)
	}
	if out, err := exec.Command("ip", "-o", "link").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "pstep"+id) {
				left = append(left, "link "+l)
			}
		}
	}
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "podstep-shadow-"+id) {
				left = append(left, "iptables "+table+": "+l)
			}
		}
	}
	if _, err := os.Lstat(dir); err == nil {
		left = append(left, "dir "+dir)
	}
	// Its containerd's state dir (shadow.StateBase/ID): the pods' rootfs,
	// shm and network namespaces are mounted there.
	state := "/run/podstep-shadows/" + id // shadow.StateBase/ID
	for _, m := range testenv.MountsUnder(state) {
		left = append(left, "mount "+m)
	}
	if _, err := os.Lstat(state); err == nil {
		left = append(left, "dir "+state)
	}
	// The pods' cgroups (run --cgroups-per-qos): no other shadow runs in
	// these tests, so none may be left under /podstep.
	cgs, _ := filepath.Glob("/sys/fs/cgroup/*/podstep")
	if more, _ := filepath.Glob("/sys/fs/cgroup/podstep"); len(more) > 0 {
		cgs = append(cgs, more...)
	}
	for _, cg := range cgs {
		left = append(left, "cgroup "+cg)
	}
	return left
}

// cniChains are the CNI-* chains of the nat and filter tables, each with
// whether it holds a rule of another network (not a shadow's): the
// harnesses of other runs make and remove theirs meanwhile.
func cniChains(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for _, table := range []string{"nat", "filter"} {
		b, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			t.Fatalf("iptables-save: %v", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if strings.HasPrefix(l, ":CNI-") {
				out[table+" "+f[0][1:]] = out[table+" "+f[0][1:]] || false
			} else if len(f) > 1 && f[0] == "-A" && strings.HasPrefix(f[1], "CNI-") && strings.Contains(l, "name: ") && !strings.Contains(l, "podstep-shadow-") {
				out[table+" "+f[1]] = true
			}
		}
	}
	return out
}

// newChains are the CNI chains in after, not in before, holding no rule
// of another network: what a shadow's network left.
func newChains(before, after map[string]bool) []string {
	var out []string
	for c, others := range after {
		if _, ok := before[c]; !ok && !others {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// chainsLeft are the new chains (newChains) that are still there, still
// without another network's rule, 2 s later: the other suites' pods make and
// remove chains meanwhile, and a chain is made empty and then filled, or
// flushed and then removed (seen: the cluster suite's pods' chains, empty
// for an instant, taken for the shadow's). A shadow's chain stays.
func chainsLeft(t *testing.T, before map[string]bool) []string {
	t.Helper()
	first := newChains(before, cniChains(t))
	if len(first) == 0 {
		return nil
	}
	time.Sleep(2 * time.Second)
	again := newChains(before, cniChains(t))
	return slices.DeleteFunc(first, func(c string) bool { return !slices.Contains(again, c) })
}

// A pod that runs (hello; hostport: portmap's DNAT rules), one that fails
// (an image no registry has), and a run interrupted with SIGINT: each on a
// shadow, the node's runtime as it was, and nothing of the shadow left.
func TestShadowRunLeavesNodeAndHostAsTheyWere(t *testing.T) {
	testenv.HostLock(t) // shadows: this test checks the host for what they leave
	e := setup(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	hello, err := os.ReadFile(e.pod("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(string(hello), "docker.io/library/busybox:1.35", "127.0.0.1:1/none:1", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file string
		interrupt  bool
		code       int
	}{
		{"hello runs", e.pod("hello"), false, 0},
		{"hostport runs", e.pod("hostport"), false, 0},
		{"a pull that fails", bad, false, 1},
		{"interrupted", e.pod("hello"), true, 130},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDirs(t)
			c := dialCRI(t, e.endpoint)
			before, chainsBefore := nodeState(t, c), cniChains(t)
			args := []string{"run", "--auto", "-o", "json", "-f", tt.file, "-r", e.endpoint, "--shadow=always",
				"--cgroups-per-qos", "--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs}
			var r *result
			if tt.interrupt {
				r = e.interruptedRun(t, append(args, "--settle", "60s"), syscall.SIGINT)
			} else {
				r = e.podstep(t, args...)
			}
			if r.code != tt.code || r.startEv == nil {
				t.Fatalf("want exit %d\n%s", tt.code, r)
			}
			why := r.startEv.Runtime.Why
			if !strings.Contains(why, "ran on a shadow of containerd") || !strings.Contains(why, "at "+e.endpoint) {
				t.Errorf("start.runtime.why = %q: want it to say the run was on a shadow of containerd at %s", why, e.endpoint)
			}
			dir := shadowDir(t, r.startEv.Runtime.Endpoint)
			if tt.code == 0 {
				if r.summary == nil || !strings.HasPrefix(r.summary.PodIP, "10.234.") {
					t.Errorf("want a pod IP of the shadow's own subnet (10.234.x), not the node's %s\n%s", e.subnet, r)
				}
				// The kubelet kills processes in kubepods/pod<UID> cgroups it
				// does not know: the shadow's pods are under /podstep.
				if !strings.Contains(r.stdout, `"cgroup_parent":"/podstep/kubepods/besteffort/pod`) {
					t.Errorf("RunPodSandbox's cgroup_parent is not under /podstep/kubepods\n%s", r)
				}
			}
			if after := nodeState(t, c); !slices.Equal(before, after) {
				t.Errorf("the node's runtime changed:\nbefore %q\nafter  %q", before, after)
			}
			if left := shadowLeft(t, dir); len(left) > 0 {
				t.Errorf("the shadow left:\n%s", strings.Join(left, "\n"))
			}
			if left := chainsLeft(t, chainsBefore); len(left) > 0 {
				t.Errorf("CNI iptables chains left: %q", left)
			}
		})
	}
}

// interruptedRun starts podstep with args, sends sig once a container has
// started (a StartContainer call in its JSON), and returns what it did.
func (e *env) interruptedRun(t *testing.T, args []string, sig syscall.Signal) *result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	sent := false
	for sc.Scan() {
		stdout.WriteString(sc.Text() + "\n")
		if !sent && strings.Contains(sc.Text(), `"StartContainer"`) {
			_ = cmd.Process.Signal(sig)
			sent = true
		}
	}
	err = cmd.Wait()
	r := &result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	}
	if !sent {
		t.Fatalf("no StartContainer before the output ended\n%s", r)
	}
	r.parseJSON(t)
	return r
}

// --keep keeps the shadow with the pod (shadowLeft sees it: the check can
// fail), and `podstep cleanup` removes it all once the run has ended.
func TestShadowKeptThenCleanedUp(t *testing.T) {
	testenv.HostLock(t) // shadows: this test checks the host for what they leave
	e := setup(t)
	d := newDirs(t)
	r := e.podstep(t, "run", "--auto", "-o", "json", "-f", e.pod("hello"), "-r", e.endpoint, "--shadow=always", "--keep",
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
	if r.code != 0 || r.summary == nil || !r.summary.Kept {
		t.Fatalf("want exit 0 and the pod kept\n%s", r)
	}
	dir := shadowDir(t, r.startEv.Runtime.Endpoint)
	left := shadowLeft(t, dir)
	for _, want := range []string{"process ", "mount ", "link ", "dir "} {
		if !slices.ContainsFunc(left, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("kept shadow: no %q in what is left: %q", want, left)
		}
	}
	cr := e.podstep(t, "cleanup", "-r", e.endpoint, "--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
	if cr.code != 0 || !strings.Contains(cr.stdout, "removed "+dir) {
		t.Errorf("podstep cleanup: want exit 0 and %s removed\n%s", dir, cr)
	}
	if left := shadowLeft(t, dir); len(left) > 0 {
		t.Errorf("after cleanup the shadow left:\n%s", strings.Join(left, "\n"))
	}
}

// A run killed with SIGKILL cannot stop its shadow: its marker lets
// `podstep cleanup` remove all of it.
func TestShadowKilledThenCleanedUp(t *testing.T) {
	testenv.HostLock(t) // shadows: this test checks the host for what they leave
	e := setup(t)
	d := newDirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, "run", "--auto", "-o", "json", "-f", e.pod("hello"), "-r", e.endpoint, "--shadow=always",
		"--settle", "60s", "--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var endpoint string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		l := sc.Text()
		if endpoint == "" && strings.Contains(l, `"type":"start"`) {
			var ev struct {
				Runtime struct{ Endpoint string } `json:"runtime"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatal(err)
			}
			endpoint = ev.Runtime.Endpoint
		}
		if strings.Contains(l, `"StartContainer"`) {
			break
		}
	}
	if endpoint == "" {
		_ = cmd.Process.Kill()
		t.Fatal("no start line or no StartContainer before the output ended")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	dir := shadowDir(t, endpoint)
	if left := shadowLeft(t, dir); !slices.ContainsFunc(left, func(l string) bool { return strings.HasPrefix(l, "process ") }) {
		t.Fatalf("after SIGKILL the shadow should still run; left: %q", left)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		cr := e.podstep(t, "cleanup", "-r", e.endpoint, "--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
		if strings.Contains(cr.stdout, "removed "+dir) || time.Now().After(deadline) {
			if cr.code != 0 {
				t.Errorf("podstep cleanup\n%s", cr)
			}
			break
		}
		time.Sleep(200 * time.Millisecond) // the killed run may not be reaped yet
	}
	if left := shadowLeft(t, dir); len(left) > 0 {
		t.Errorf("after cleanup the shadow left:\n%s", strings.Join(left, "\n"))
	}
}

// --shadow=auto shadows only a runtime a kubelet watches: the harness has
// no kubelet sandbox, so the run is on it; with one (a sandbox carrying the
// kubelet's labels, made here), the run goes to a shadow.
func TestShadowAutoFollowsKubeletSandboxes(t *testing.T) {
	testenv.HostLock(t) // shadows: this test checks the host for what they leave
	e := setup(t)
	d := newDirs(t)
	r := e.podstep(t, "run", "--auto", "-o", "json", "-f", e.pod("hello"), "-r", e.endpoint, "--shadow=auto",
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
	if r.code != 0 || r.startEv == nil || r.startEv.Runtime.Endpoint != e.endpoint {
		t.Fatalf("no kubelet sandbox: want the run on %s itself\n%s", e.endpoint, r)
	}

	c := dialCRI(t, e.endpoint)
	ctx := ctx10(t)
	logDir := t.TempDir()
	sb, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "kubelet-pod", Namespace: "default", Uid: "6f1c0a4e-shadow-auto"},
		Labels:       map[string]string{"io.kubernetes.pod.uid": "6f1c0a4e-shadow-auto", "io.kubernetes.pod.name": "kubelet-pod", "io.kubernetes.pod.namespace": "default"},
		LogDirectory: logDir, Linux: &runtimeapi.LinuxPodSandboxConfig{},
	}})
	if err != nil {
		t.Fatalf("make a kubelet-like sandbox: %v", err)
	}
	t.Cleanup(func() {
		ctx := ctx10(t)
		_, _ = c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId})
		_, _ = c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId})
	})
	r = e.podstep(t, "run", "--auto", "-o", "json", "-f", e.pod("hello"), "-r", e.endpoint,
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
	if r.code != 0 || r.startEv == nil || !strings.Contains(r.startEv.Runtime.Why, "a kubelet watches it") {
		t.Fatalf("a kubelet's sandbox on the runtime: want the default (--shadow=auto) to run on a shadow, saying why\n%s", r)
	}
	if left := shadowLeft(t, shadowDir(t, r.startEv.Runtime.Endpoint)); len(left) > 0 {
		t.Errorf("the shadow left:\n%s", strings.Join(left, "\n"))
	}
}

// The shadows' image cache (internal/shadow cache.go): a second shadow of
// the same runtime starts on the first's root (the sandbox image kept, not
// copied), but an image the node does not have is not kept for the replay:
// the pod's pull from the registry happens again, as on the node. What
// stays between runs is only the cache's root, nothing mounted, and
// `podstep cleanup` removes it.
func TestShadowImageCache(t *testing.T) {
	testenv.HostLock(t) // shadows: this test checks the host for what they leave
	e, reg := setupRegistry(t)
	// A shadow dir of its own (PODSTEP_SHADOW_DIR), so that its cache
	// beside it is this test's: another run's cleanup does not remove it.
	base, err := os.MkdirTemp("", "pstc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	e.extraEnv = append(slices.Clone(e.extraEnv), "PODSTEP_SHADOW_DIR="+filepath.Join(base, "shadows"))
	m := writePullManifest(t, reg, pullCase{key: reg.addr, user: reg.user, password: reg.password, refSecret: true, policy: "IfNotPresent"})
	c := dialCRI(t, e.endpoint)
	if st, err := c.img.ImageStatus(ctx10(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: reg.image}}); err != nil {
		t.Fatal(err)
	} else if st.Image != nil {
		// The harness pulled it for another test: the node must not have it here.
		if _, err := c.img.RemoveImage(ctx10(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.image}}); err != nil {
			t.Fatal(err)
		}
	}
	var cache string
	for i, want := range []string{"", "kept from an earlier shadow"} {
		d := newDirs(t)
		before := nodeState(t, c)
		r := e.podstep(t, "run", "--auto", "-o", "json", "-f", m.path, "-r", e.endpoint, "--shadow=always",
			"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
		if r.code != 0 || r.startEv == nil {
			t.Fatalf("run %d: want exit 0\n%s", i+1, r)
		}
		if !strings.Contains(r.stdout, `"method":"PullImage"`) {
			t.Errorf("run %d: no PullImage: the shadow had %s, which the node does not have\n%s", i+1, reg.image, r)
		}
		if why := r.startEv.Runtime.Why; !strings.Contains(why, want) {
			t.Errorf("run %d: start.runtime.why = %q: want %q", i+1, why, want)
		}
		if after := nodeState(t, c); !slices.Equal(before, after) {
			t.Errorf("run %d: the node's runtime changed:\nbefore %q\nafter  %q", i+1, before, after)
		}
		dir := shadowDir(t, r.startEv.Runtime.Endpoint)
		if left := shadowLeft(t, dir); len(left) > 0 {
			t.Errorf("run %d: the shadow left:\n%s", i+1, strings.Join(left, "\n"))
		}
		cache = filepath.Join(filepath.Dir(filepath.Dir(dir)), "shadow-cache")
		// What stays on the node is said, with how to keep none.
		if !strings.Contains(r.stderr, "its images stay in the shadows' image cache "+cache) || !strings.Contains(r.stderr, "PODSTEP_SHADOW_CACHE_MB=0") {
			t.Errorf("run %d: stderr does not say the image cache stays at %s:\n%s", i+1, cache, r.stderr)
		}
	}
	if want := filepath.Join(base, "shadow-cache"); cache != want {
		t.Fatalf("the shadows ran under %s, want %s", filepath.Dir(cache), base)
	}
	// What stays: one root per node runtime, nothing else, nothing mounted.
	ents, err := os.ReadDir(cache)
	if err != nil || len(ents) == 0 {
		t.Fatalf("no image cache at %s: %v", cache, err)
	}
	for _, ent := range ents {
		inside, _ := os.ReadDir(filepath.Join(cache, ent.Name()))
		if len(inside) != 1 || inside[0].Name() != "root" {
			t.Errorf("%s holds %v, want only root", filepath.Join(cache, ent.Name()), inside)
		}
	}
	if mounts := testenv.MountsUnder(cache); len(mounts) > 0 {
		t.Errorf("mounted under the cache: %q", mounts)
	}
	d := newDirs(t)
	cr := e.podstep(t, "cleanup", "-r", e.endpoint, "--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
	if cr.code != 0 || !strings.Contains(cr.stdout, "image cache of shadow runtimes") {
		t.Errorf("podstep cleanup: want exit 0 and the image cache removed\n%s", cr)
	}
	if _, err := os.Lstat(cache); err == nil {
		t.Errorf("%s left after podstep cleanup", cache)
	}
}

// hostUsers: false on a shadow ends as on the node's runtime: containerd
// 1.6 reports no user-namespace support, so the kubelet refuses the pod
// and names why (the fleet's odd node); containerd 2.x runs it. The
// pod's rootfs is mounted under the shadow's state dir, which a user
// namespace's root must reach as an unprivileged uid (runc: "remount-private
// … permission denied" when it was under podstep's 0750 dir).
func TestShadowUserNamespaces(t *testing.T) {
	testenv.HostLock(t) // shadows: this test checks the host for what they leave
	e := setup(t)
	d := newDirs(t)
	r := e.podstep(t, "run", "--auto", "-o", "json", "-f", e.pod("userns"), "-r", e.endpoint, "--shadow=always",
		"--settle", "0", "--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs)
	if r.startEv == nil || !strings.Contains(r.startEv.Runtime.Why, "ran on a shadow of containerd") {
		t.Fatalf("not run on a shadow\n%s", r)
	}
	if e.rt.major < 2 {
		const want = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if f := r.summary; r.code != 1 || f == nil || f.Failure == nil || f.Failure.Step != "run-sandbox" || f.Failure.Reason != "CreatePodSandboxError" || !strings.Contains(f.Failure.Message, want) {
			t.Errorf("want exit 1, run-sandbox CreatePodSandboxError %q\n%s", want, r)
		}
	} else if r.code != 0 || r.summary == nil || r.summary.Outcome != "running" {
		t.Errorf("want the pod running on the shadow of %s, as on the node\n%s", e.rt, r)
	}
	if left := shadowLeft(t, shadowDir(t, r.startEv.Runtime.Endpoint)); len(left) > 0 {
		t.Errorf("the shadow left:\n%s", strings.Join(left, "\n"))
	}
}
