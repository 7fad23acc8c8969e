//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestKubeletNameReserved makes the "name is reserved" failure with the
// real kubelet v1.37, behind `podstep proxy`, on a sick node whose CNI ADD
// hangs (sick_test.go). The kubelet's runtimeRequestTimeout is 5 s, so
// its RunPodSandbox deadline is 10 s (twice it: remoteRuntimeService.
// RunPodSandbox in k8s.io/cri-client). The first RunPodSandbox gives up
// at that deadline while containerd still waits on the plugin; the pod
// worker syncs again after its back-off (about 10 s) with attempt 0 again,
// the same sandbox name, and containerd refuses it. The proxy must name
// the first call as the cause of the retry's failure and explain both.
func TestKubeletNameReserved(t *testing.T) {
	e := setup(t)
	bin, port, healthz := kubeletEnv(t)
	n := startSick(t, e, "", map[string]string{"podstep-hang": hangingPlugin})
	n.setNetwork(t, "sick-hang", sickConflist("sick-hang", "podstep-hang"))
	// A short dir: the proxy's socket is in it.
	dir, err := os.MkdirTemp("", "pkr")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "cri.sock")
	p := n.env.startProxy(t, sock)
	k := startKubelet(t, bin, dir, sock, port, healthz, "runtimeRequestTimeout: 5s")
	c := dialCRI(t, n.sh.Endpoint)
	t.Cleanup(func() {
		k.stop(t)
		n.release(t)
		if t.Failed() {
			t.Logf("%s", k.logTail(60))
		}
		removeKubeletPods(t, c)
		unmountKubelet(t, dir)
		_ = os.RemoveAll(dir)
	})
	sent := time.Now()
	k.drop(t, e, "hello.yaml", "reserved")

	wants := []string{`"event":"gave-up"`, "reused the name of RunPodSandbox #", "which is the cause",
		`"explanation":{"id":"sandbox-create-timeout"`, `"explanation":{"id":"sandbox-name-reserved"`}
	out, missing := p.waitOutput(90*time.Second, wants...)
	if len(missing) == 0 {
		t.Logf("the proxy named the reserved name and its cause %s after the pod was dropped",
			time.Since(sent).Round(time.Second))
		return
	}
	for _, w := range missing {
		t.Errorf("the proxy's output lacks %s", w)
	}
	t.Errorf("the proxy's output:\n%s\n%s", out, k.logTail(40))
}
