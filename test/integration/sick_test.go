//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/explain"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/shadow"
	"github.com/podstep/podstep/test/internal/testenv"
)

// A sick node: a private containerd made of the harness's own binary and
// config (internal/shadow: only its paths changed), whose CNI conf dir and
// CNI bin dir the test controls. containerd reads one CNI conf dir, so a
// broken network (no config, a plugin that fails or hangs, an exhausted
// IP range) is made on a copy: the harness and the other tests are
// untouched. A copy starts in about a second (the harness's pause image is
// copied into it) and is removed with all it made when the test ends.

// sickNode is a private containerd of the harness's binary and config.
type sickNode struct {
	sh *shadow.Shadow
	// env runs podstep against it.
	env *env
	// cni is its CNI bin dir: the harness's plugins (links) and the test's.
	cni string
}

// harnessCNIBin is the CNI bin dir in the harness's containerd config
// (bin_dir = "..." in 1.6's, bin_dirs = ["..."] in 2.x's).
var harnessCNIBin = regexp.MustCompile(`bin_dirs? = \[?"([^"]+)"`)

// sickPrefix begins the name of every sick node's dir in the temp dir.
const sickPrefix = "podstep-sick-"

// sickNodeDir is the shadows' base in a sick node's dir: the shadows'
// image cache (shadow.CacheBase: beside the base) is then in that dir too,
// and goes with it (a copy's config names its own temp dirs: no later
// node could start warm from its cache).
const sickNodeDir = "n"

// removeDeadSick removes the sick nodes of test processes that were
// killed before their clean-up (their holder is gone: shadow.Leftovers),
// and their small disks.
func removeDeadSick(ctx context.Context, t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sickPrefix+"*"))
	for _, dir := range dirs {
		removed := 0
		for _, l := range shadow.Leftovers(filepath.Join(dir, sickNodeDir)) {
			if l.Err != nil {
				continue
			}
			if err := shadow.Remove(ctx, l); err != nil {
				t.Logf("a sick node left by a killed test, %s: %v", l.Dir, err)
				continue
			}
			removed++
			t.Logf("removed a sick node left by a killed test: %s", l.Dir)
		}
		// The dir holds only its node and the node's image cache: the node
		// gone, the dir goes too.
		if ents, err := os.ReadDir(filepath.Join(dir, sickNodeDir)); removed == 0 || err != nil || len(ents) > 0 {
			continue
		}
		_ = os.RemoveAll(shadow.CacheBase(filepath.Join(dir, sickNodeDir)))
		_ = os.Remove(filepath.Join(dir, sickNodeDir))
		if strings.HasPrefix(filepath.Base(dir), sickPrefix+"disk-") {
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		_ = os.Remove(dir)
	}
}

// startSick starts a sick node of the harness's runtime under base (""
// for a temp dir of its own): plugins are CNI plugins (name → script) put
// in its CNI bin dir beside the harness's; images are copied from the
// harness (its pause image always is).
func startSick(t *testing.T, e *env, base string, plugins map[string]string, images ...string) *sickNode {
	t.Helper()
	testenv.HostLock(t) // a shadow: the other suite's shadow tests check the host
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	removeDeadSick(ctx, t)
	node, err := shadow.Find(ctx, e.endpoint)
	if err != nil {
		t.Fatalf("the harness's runtime: %v", err)
	}
	m := harnessCNIBin.FindSubmatch(node.ConfigData)
	if m == nil {
		t.Fatalf("no CNI bin dir in the harness's config %s", node.Config)
	}
	harnessBin := string(m[1])
	if base == "" {
		// A short dir: the copy's sockets are under it (108 bytes at most).
		base, err = os.MkdirTemp("", sickPrefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(base) })
	}
	// Its CNI bin dir, beside (base holds only the node: a killed test's
	// is found and removed whole).
	bin, err := os.MkdirTemp("", "podstep-sickbin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(bin) })
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(harnessBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if err := os.Symlink(filepath.Join(harnessBin, ent.Name()), filepath.Join(bin, ent.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for name, script := range plugins {
		script = strings.ReplaceAll(script, "RELEASE", filepath.Join(bin, "release"))
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The node's config with its CNI bin dir ours (1.6 has only one).
	node.ConfigData = []byte(strings.ReplaceAll(string(node.ConfigData), `"`+harnessBin+`"`, `"`+bin+`"`))
	start := time.Now()
	sh, err := shadow.Start(ctx, node, shadow.Options{Base: filepath.Join(base, sickNodeDir), Images: images})
	if err != nil {
		t.Fatalf("start a sick copy of the harness's containerd: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := sh.Stop(ctx); err != nil {
			t.Errorf("remove the sick node: %v", err)
		}
	})
	t.Logf("sick node %s up in %s", sh.Endpoint, time.Since(start).Round(time.Millisecond))
	se := *e
	se.endpoint = sh.Endpoint
	n := &sickNode{sh: sh, env: &se, cni: bin}
	// Before the node is removed: a hung ADD ends.
	t.Cleanup(func() { n.release(t) })
	return n
}

// setNetwork makes conflist the node's only CNI config ("" for none),
// with DATA replaced by its host-local IPAM dir, and waits until its
// containerd has loaded it (its CRI Status names the network), or, for
// none, says NetworkReady=false.
func (n *sickNode) setNetwork(t *testing.T, name, conflist string) {
	t.Helper()
	dir := n.sh.Layout.CNIConfDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if err := os.Remove(filepath.Join(dir, ent.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if conflist != "" {
		data := strings.ReplaceAll(conflist, "DATA", n.ipamDir())
		if err := os.WriteFile(filepath.Join(dir, "10-"+name+".conflist"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := dialCRI(t, n.sh.Endpoint)
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		st, err := c.rt.Status(ctx10(t), &runtimeapi.StatusRequest{Verbose: true})
		if err != nil {
			t.Fatalf("CRI Status of the sick node: %v", err)
		}
		ready := true
		for _, cond := range st.GetStatus().GetConditions() {
			if cond.Type == runtimeapi.NetworkReady {
				ready = cond.Status
			}
		}
		last = st.GetInfo()["cniconfig"]
		if conflist == "" && !ready || conflist != "" && ready && strings.Contains(last, `"`+name+`"`) {
			return
		}
	}
	t.Fatalf("the sick node's containerd did not load network %q within 30 s; its CNI config: %s", name, last)
}

// ipamDir is host-local's data dir of the node (its networks' dirs are in it).
func (n *sickNode) ipamDir() string { return n.sh.Layout.CNIData() }

// CNI plugins of sick nodes: each answers VERSION, and DEL, CHECK, STATUS
// and GC with success (containerd's clean-up after a failed ADD calls DEL).
const cniPluginHead = `#!/bin/sh
# A CNI plugin of podstep's integration tests (test/integration/sick_test.go).
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'; exit 0 ;;
ADD) ;;
*) cat >/dev/null; exit 0 ;;
esac
cat >/dev/null
`

// failingPlugin fails every ADD with a CNI error, as a plugin whose node
// agent is not running does.
const failingPlugin = cniPluginHead + `echo '{"cniVersion":"1.0.0","code":11,"msg":"podstep-fail: cannot reach the network agent","details":"dial unix /run/podstep-fail/agent.sock: connect: no such file or directory"}'
exit 1
`

// hangingPlugin blocks every ADD until the file RELEASE exists (or 2
// minutes passed: a killed test's is not left for ever): a child holds the
// plugin's stdout, so containerd waits for it even after it killed the
// plugin when the caller gave up (as with a plugin stuck on a hung node
// agent).
const hangingPlugin = cniPluginHead + `(i=0; while [ ! -e RELEASE ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
echo '{"cniVersion":"1.0.0","code":11,"msg":"podstep-hang: released"}')
exit 1
`

// sickConflist is a network of one plugin.
func sickConflist(name, plugin string) string {
	return `{"cniVersion":"1.0.0","name":"` + name + `","plugins":[{"type":"` + plugin + `"}]}`
}

// release lets every hung ADD of the node's hangingPlugin end.
func (n *sickNode) release(t *testing.T) {
	if err := os.WriteFile(filepath.Join(n.cni, "release"), nil, 0o600); err != nil {
		t.Error(err)
	}
}

// exhaustedConflist is a ptp network with host-local IPAM on a /30: one
// address for pods (.1 is the gateway, .3 the broadcast).
const exhaustedConflist = `{"cniVersion":"1.0.0","name":"sick-ipam","plugins":[{"type":"ptp",
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.254.254.0/30"}]],"dataDir":"DATA"}}]}`

// leakAddresses writes host-local's file for the /30's one address, as a
// sandbox removed without a CNI DEL leaves it: the range is exhausted.
func leakAddresses(t *testing.T, n *sickNode) {
	dir := filepath.Join(n.ipamDir(), "sick-ipam")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	leaked := strings.Repeat("dead", 16) + "\neth0"
	if err := os.WriteFile(filepath.Join(dir, "10.254.254.2"), []byte(leaked), 0o600); err != nil {
		t.Fatal(err)
	}
}

// reservedUID is the pod UID of the name-is-reserved case: the kubelet's
// first call and podstep's retry name the same sandbox.
const reservedUID = "5e1c0b7a-0000-4000-8000-000000000035"

// firstCallGivesUp sends the kubelet's first RunPodSandbox of pod name
// (namespace default, attempt 0) and gives up on it after 2 s, as the
// kubelet does after its deadline: the node's CNI ADD hangs, and the
// runtime goes on making the sandbox under its name.
func firstCallGivesUp(name, uid string) func(t *testing.T, n *sickNode) {
	return func(t *testing.T, n *sickNode) {
		c := dialCRI(t, n.sh.Endpoint)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cfg := &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
			Labels:   map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid},
			Linux:    &runtimeapi.LinuxPodSandboxConfig{},
		}
		_, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("the first RunPodSandbox: %v, want its deadline to pass (the CNI ADD hangs)", err)
		}
	}
}

// runSandboxMatches sends a RunPodSandbox to the node itself (podstep, as
// the kubelet, sent none) and checks that the runtime's answer finds the
// entry id.
func runSandboxMatches(id string) func(t *testing.T, n *sickNode) {
	return func(t *testing.T, n *sickNode) {
		c := dialCRI(t, n.sh.Endpoint)
		cfg := &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "direct", Namespace: "default", Uid: "direct-uid"},
			Linux:    &runtimeapi.LinuxPodSandboxConfig{},
		}
		resp, err := c.rt.RunPodSandbox(ctx10(t), &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err == nil {
			_, _ = c.rt.StopPodSandbox(ctx10(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: resp.PodSandboxId})
			_, _ = c.rt.RemovePodSandbox(ctx10(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: resp.PodSandboxId})
			t.Fatalf("RunPodSandbox on the node made a sandbox, want it refused")
		}
		msg := status.Convert(err).Message()
		t.Logf("RunPodSandbox sent anyway: %s", msg)
		// containerd 1.6 keeps the sandbox (NotReady): its network cannot be
		// torn down either until a config is back.
		list, err := c.rt.ListPodSandbox(ctx10(t), &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			t.Logf("the runtime kept %d sandbox(es) of the refused call: removed once a network is back", len(list.Items))
			n.setNetwork(t, "sick-lo", sickConflist("sick-lo", "loopback"))
			for _, sb := range list.Items {
				if _, err := c.rt.StopPodSandbox(ctx10(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
					t.Errorf("stop the kept sandbox: %v", err)
				}
				if _, err := c.rt.RemovePodSandbox(ctx10(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
					t.Errorf("remove the kept sandbox: %v", err)
				}
			}
		}
		if got := explain.Find(explain.Failure{Reason: reason.ErrCreatePodSandbox, Message: msg}); got == nil || got.ID != id {
			t.Errorf("the runtime's answer %q finds %v, want %s", msg, got, id)
		}
	}
}

// TestExplainSickProxy: `podstep proxy` in front of a sick node whose CNI
// ADD hangs. A kubelet's RunPodSandbox (its deadline here 3 s, 4 min on a
// node) is named in the stuck-at view within 1 s of being sent; once the
// kubelet gave up, its retry of the same name is refused by the runtime
// itself ("is reserved"), and the proxy names the first call as the
// cause and explains the failed step (sandbox-name-reserved).
func TestExplainSickProxy(t *testing.T) {
	e := setup(t)
	n := startSick(t, e, "", map[string]string{"podstep-hang": hangingPlugin})
	n.setNetwork(t, "sick-hang", sickConflist("sick-hang", "podstep-hang"))
	dir, err := os.MkdirTemp("", "sxp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "p.sock")
	p := n.env.startProxy(t, sock)
	c := dialCRI(t, "unix://"+sock)
	const name, uid = "web", "5e1c0b7a-0000-4000-8000-0000000000a1"
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		Labels:   map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{},
	}
	const deadline = 3 * time.Second
	sent := time.Now()
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		errc <- err
	}()
	raw := func() string {
		p.mu.Lock()
		defer p.mu.Unlock()
		return strings.Join(p.raw, "\n")
	}
	const slow = `"event":"slow","call":{"seq":1,"method":"RunPodSandbox"`
	var seen time.Duration
	for time.Since(sent) < deadline && seen == 0 {
		if strings.Contains(raw(), slow) {
			seen = time.Since(sent)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if seen == 0 || seen > time.Second {
		t.Fatalf("the hung RunPodSandbox was named after %s, want within 1 s; output:\n%s", seen, raw())
	}
	t.Logf("the hung call was named %s after it was sent", seen.Round(time.Millisecond))
	first := <-errc
	if code := status.Code(first); code != codes.DeadlineExceeded && code != codes.Canceled {
		t.Fatalf("the first call: %v, want its deadline to pass", first)
	}
	t.Logf("the first call, at its deadline: %v", first)
	// The kubelet's retry, attempt 0 again (no sandbox was made).
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	_, err = c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "is reserved") {
		t.Fatalf("the retry: %v, want the runtime's name is reserved", err)
	}
	t.Logf("the retry: %v", status.Convert(err).Message())
	wants := []string{`"event":"gave-up"`, "reused the name of RunPodSandbox #1", "which is the cause",
		`"explanation":{"id":"sandbox-create-timeout"`, `"explanation":{"id":"sandbox-name-reserved"`}
	out, missing := p.waitOutput(30*time.Second, wants...)
	for _, w := range missing {
		t.Errorf("the proxy's output has no %s:\n%s", w, out)
	}
	if testing.Verbose() {
		t.Logf("proxy output:\n%s", out)
	}
}

// leaveFree is a sickCase's prepare for a small disk: a file fills the
// node's disk until free bytes are left, less than an image's layers need
// (the private busybox's compressed layer is ~1 MB, unpacked ~2 MB): a 6m
// disk alone was enough for them on one machine and not on another.
func leaveFree(free uint64) func(t *testing.T, n *sickNode) {
	return func(t *testing.T, n *sickNode) {
		t.Helper()
		root := n.sh.Layout.Root()
		var st syscall.Statfs_t
		if err := syscall.Statfs(root, &st); err != nil {
			t.Fatal(err)
		}
		avail := st.Bavail * uint64(st.Bsize)
		if avail <= free {
			return
		}
		f, err := os.Create(filepath.Join(filepath.Dir(root), "filler"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 64<<10)
		for left := avail - free; left > 0; {
			n := min(uint64(len(buf)), left)
			if _, err := f.Write(buf[:n]); err != nil {
				t.Fatalf("fill the small disk: %v", err)
			}
			left -= n
		}
		if err := syscall.Statfs(root, &st); err == nil {
			t.Logf("the small disk: %d KiB free of %d KiB", st.Bavail*uint64(st.Bsize)>>10, st.Blocks*uint64(st.Bsize)>>10)
		}
	}
}

// smallDisk mounts a tmpfs of size (64m) on a new dir and returns it;
// unmounted and removed at the end, after the node on it.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", sickPrefix+"disk-")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		_ = os.Remove(dir)
		t.Fatalf("mount a %s tmpfs: %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount the small disk: %v", err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		_ = os.Remove(dir)
	})
	return dir
}

// TestPLEGStoppedRuntime: a runtime that stops answering (the sick node's
// containerd stopped with SIGSTOP, as a containerd stuck on its disk or
// its locks) behind podstep proxy, while a client relists as the kubelet's
// PLEG does (an unfiltered ListPodSandbox, then ListContainers, each
// second: GenericPLEG.Relist): the proxy says the relist late 5 s after
// the last one began, naming the list call it waits on, and says it again
// once the runtime answers (SIGCONT).
func TestPLEGStoppedRuntime(t *testing.T) {
	e := setup(t)
	n := startSick(t, e, "", nil)
	pid, err := shadow.ServingPID(n.sh.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sxl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "p.sock")
	p := n.env.startProxy(t, sock)
	c := dialCRI(t, "unix://"+sock)
	var mu sync.Mutex
	var began time.Time // the last relist's start
	stop := make(chan struct{})
	relisted := make(chan struct{})
	go func() {
		defer close(relisted)
		for {
			select {
			case <-stop:
				return
			default:
			}
			now := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{}})
			if err == nil {
				_, err = c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{}})
			}
			cancel()
			if err == nil {
				mu.Lock()
				began = now
				mu.Unlock()
			}
			time.Sleep(time.Second) // the kubelet's genericPlegRelistPeriod
		}
	}()
	t.Cleanup(func() { close(stop); <-relisted })
	raw := func() string {
		p.mu.Lock()
		defer p.mu.Unlock()
		return strings.Join(p.raw, "\n")
	}
	time.Sleep(3500 * time.Millisecond) // three relists: a kubelet's PLEG
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume) // never leave it stopped
	late := regexp.MustCompile(`"type":"pleg","event":"late",[^\n]*"open":\{"seq":\d+,"method":"(ListPodSandbox|ListContainers)"`)
	var seen time.Duration
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && seen == 0; time.Sleep(20 * time.Millisecond) {
		if late.MatchString(raw()) {
			mu.Lock()
			seen = time.Since(began)
			mu.Unlock()
		}
	}
	resume()
	if seen == 0 {
		t.Fatalf("no late relist said in 15 s of a stopped runtime:\n%s", raw())
	}
	t.Logf("the late relist was said %s after it began: %s", seen.Round(time.Millisecond), late.FindString(raw()))
	if seen < 5*time.Second || seen > 7*time.Second {
		t.Errorf("said %s after the last relist began, want about 5 s", seen)
	}
	if out, missing := p.waitOutput(10*time.Second, `"type":"pleg","event":"relisted"`); len(missing) > 0 {
		t.Errorf("no relisted note after SIGCONT:\n%s", out)
	}
}
