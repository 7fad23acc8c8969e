//go:build cluster

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hangPrefix is the pod-name prefix whose CNI ADD the node harnesses'
// podstep-hang-pod plugin holds (hack/test.sh's node_env:
// PODSTEP_CNI_HANG_POD; hack/lib/harness-cni.sh).
const hangPrefix = "hang-cni-"

// TestNameReservedOnCluster: on each node, a pod whose CNI ADD hangs (the
// node's chain ends with podstep-hang-pod, which holds the ADD of pods named
// hang-cni-*), created through the API server and run by the node's real
// kubelet v1.37 behind `podstep proxy`. The kubelet gives up on its
// RunPodSandbox at 2 × runtimeRequestTimeout (4 min with the default 2 min),
// retries the pod with attempt 0 again, the same sandbox name, and the
// runtime, still making the first sandbox, refuses it: "failed to reserve
// sandbox name ... is reserved" (containerd 9947, 12438). The proxy's output
// for the pod must say the first call was given up on, name it as the cause of
// the retry's error, and explain both failures (sandbox-create-timeout,
// sandbox-name-reserved).
//
// The pods are created first; the test then waits (t.Parallel) until the
// other cluster tests have run, so that the kubelet's 4 minutes pass beside
// them. The hung ADDs are released at the end (a file the plugin waits for).
func TestNameReservedOnCluster(t *testing.T) {
	c := newCluster(t)
	type hung struct {
		node          Node
		log, release  string
		name, uid, ns string
	}
	var pods []hung
	ns := c.newNamespace(t, "reserved")
	for _, n := range c.Nodes {
		log := proxyLog(t, n)
		dir := harnessDir(t, n)
		if !hangConfigured(t, dir) {
			notRun(t, "the CNI network of "+n.Name+" has no podstep-hang-pod plugin: its harness needs PODSTEP_CNI_HANG_POD="+hangPrefix+" (hack/test.sh's node_env)")
		}
		name := hangPrefix + strings.ReplaceAll(n.Runtime, ".", "")
		spec := corev1.PodSpec{Containers: []corev1.Container{sleeper("app", "")}, TerminationGracePeriodSeconds: new(int64)}
		onNode(&spec, n)
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx(t), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h := hung{node: n, log: log, release: filepath.Join(dir, "cni-hang", "release-"+ns+"_"+name), name: name, uid: string(p.UID), ns: ns}
		// Before the namespace's own clean-up (registered earlier, so run later):
		// the hung ADD ends, the runtime fails the first sandbox, the pod goes.
		t.Cleanup(func() {
			if err := os.WriteFile(h.release, nil, 0o600); err != nil {
				t.Errorf("releasing the hung CNI ADD of %s: %v", h.name, err)
			}
		})
		pods = append(pods, h)
	}
	created := time.Now()
	t.Logf("created %d pods whose CNI ADD hangs; waiting for the other tests (t.Parallel), then for the kubelet's retry", len(pods))
	t.Parallel()

	// The kubelet's deadline for RunPodSandbox is 4 min; its retry comes
	// after the pod worker's back-off (about 10 s, more on a loaded node).
	wants := []string{`"event":"gave-up"`, "RunPodSandbox reused the name of RunPodSandbox #", "which is the cause",
		`"explanation":{"id":"sandbox-create-timeout"`, `"explanation":{"id":"sandbox-name-reserved"`}
	for _, h := range pods {
		t.Run(h.node.Runtime, func(t *testing.T) {
			deadline := created.Add(8 * time.Minute)
			var missing []string
			for {
				missing = missing[:0]
				lines := podLines(t, h.log, h.uid)
				for _, w := range wants {
					if !strings.Contains(lines, w) {
						missing = append(missing, w)
					}
				}
				if len(missing) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(2 * time.Second)
			}
			if len(missing) == 0 {
				t.Logf("%s/%s on %s: the proxy named the reserved name and its cause, %s after the pod was created",
					h.ns, h.name, h.node.Name, time.Since(created).Round(time.Second))
				return
			}
			for _, w := range missing {
				t.Errorf("the proxy's lines for %s/%s (uid %s) lack %s", h.ns, h.name, h.uid, w)
			}
			cx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if ev, err := c.Client.CoreV1().Events(h.ns).List(cx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + h.name}); err == nil {
				for _, e := range ev.Items {
					t.Logf("event %s %s: %.300s", e.Type, e.Reason, e.Message)
				}
			}
			t.Logf("the proxy's lines for the pod:\n%.6000s", podLines(t, h.log, h.uid))
		})
	}
}

// harnessDir is the folder of the harness that runs node's containerd: its
// socket is DIR/run/containerd.sock.
func harnessDir(t *testing.T, n Node) string {
	t.Helper()
	sock := strings.TrimPrefix(n.Endpoint, "unix://")
	if sock == n.Endpoint || filepath.Base(sock) != "containerd.sock" {
		notRun(t, "the endpoint of "+n.Name+" is not a harness's socket (DIR/run/containerd.sock): "+n.Endpoint)
	}
	return filepath.Dir(filepath.Dir(sock))
}

// hangConfigured says whether the harness in dir has podstep-hang-pod in
// its CNI network.
func hangConfigured(t *testing.T, dir string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "cni", "*.conflist"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(`"podstep-hang-pod"`)) {
			return true
		}
	}
	return false
}

// podLines are the lines of the proxy's log that name the pod's uid.
func podLines(t *testing.T, log, uid string) string {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(uid)) {
			b.Write(sc.Bytes())
			b.WriteByte('\n')
		}
	}
	return b.String()
}
