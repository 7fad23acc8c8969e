//go:build cluster

package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/live/livetest"
)

// TestProxyLivePageInChromium: `podstep proxy --serve` in front of a real
// kubelet (hack/cluster-up.sh's proxy of the containerd 1.6 node, its page
// at PODSTEP_LIVE_URL_16), opened in a real browser (Debian's chromium,
// headless: internal/live/livetest) before a pod is created through the
// API server on that node. The page must move to the pod (the newest the
// kubelet creates) and show its steps as the kubelet creates it: the init
// container's steps appear while the kubelet still waits for it to exit
// (it sleeps 2 s), long before the app container's create step ends; at
// the end every step of the creation is on the page, done, in the
// kubelet's order. One node is enough: the page is the proxy's, whatever
// the runtime.
func TestProxyLivePageInChromium(t *testing.T) {
	c := newCluster(t)
	n := c.Node("1.6")
	if n.LiveURL == "" {
		notRun(t, "PODSTEP_LIVE_URL_16 not set: no `podstep proxy --serve` in front of the kubelet (hack/cluster-up.sh with PODSTEP_CLUSTER_PROXY prints LIVE_URL_16)")
	}
	ns := c.newNamespace(t, "proxylive")
	br := livetest.Start(t)
	br.Open(t, n.LiveURL) // the newest pod so far, if any

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: ns}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup", Image: busybox, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", "sleep 2"}}},
		Containers:                    []corev1.Container{sleeper("app", "")},
		TerminationGracePeriodSeconds: new(int64),
	}}
	onNode(&pod.Spec, n)
	created := livetest.NowMs()
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitForPodRunning(t, ns, pod.Name)

	key := ns + "/" + pod.Name
	want := []string{"run-sandbox", "create/setup", "start/setup", "create/app", "start/app"}
	var rows []livetest.Row
	waitFor(t, 30*time.Second, "pod "+key+"'s steps on the live page "+n.LiveURL, func(context.Context) (bool, error) {
		if got := br.Text(t, "pod"); got != key {
			return false, fmt.Errorf("the page shows pod %q", got)
		}
		rows = br.Rows(t)
		for _, w := range want {
			if r, ok := row(rows, w); !ok || r.State != "done" {
				return false, fmt.Errorf("no done step %s on the page: %+v", w, rows)
			}
		}
		return true, nil
	})
	if rt := br.Text(t, "runtime"); !strings.Contains(rt, "podstep proxy") || !strings.Contains(rt, n.KubeletEndpoint) {
		t.Errorf("the page's runtime line %q: want the kubelet's calls through podstep proxy at %s", rt, n.KubeletEndpoint)
	}
	// In the kubelet's order.
	last := 0
	for _, w := range want {
		r, _ := row(rows, w)
		if r.ID <= last {
			t.Errorf("step %s is step %d on the page, after step %d: want %v in this order; page %+v", w, r.ID, last, want, rows)
		}
		last = r.ID
	}

	// Live: the pod's bars entered the page one by one as its steps ended,
	// start/setup's more than a second before create/app ended.
	setup, _ := row(rows, "start/setup")
	app, _ := row(rows, "create/app")
	bars := map[int]livetest.Bar{}
	var lat []float64
	for _, b := range br.Seen(t) {
		if b.Pod != key {
			continue // the page showed another pod then
		}
		if b.Shown < created {
			t.Errorf("step %d's bar was on the page before the pod was created (shown %.0f, created %.0f)", b.Step, b.Shown, created)
		}
		if _, dup := bars[b.Step]; !dup {
			bars[b.Step] = b
			lat = append(lat, b.Shown-b.End)
		}
	}
	sb, ok1 := bars[setup.ID]
	ab, ok2 := bars[app.ID]
	switch {
	case !ok1 || !ok2:
		t.Errorf("no timeline bar was added for start/setup (step %d) or create/app (step %d): %+v", setup.ID, app.ID, bars)
	case sb.Shown > ab.End-1000:
		t.Errorf("start/setup was shown %.0f ms before create/app ended: want > 1 s (the init container sleeps 2 s; the page must show it while the kubelet waits)", ab.End-sb.Shown)
	}
	if len(lat) > 0 {
		sort.Float64s(lat)
		t.Logf("proxy live page: %d steps of %s shown live; step end → in the DOM: median %.0f ms, min %.0f, max %.0f; start/setup shown %.0f ms before create/app ended",
			len(lat), key, lat[len(lat)/2], lat[0], lat[len(lat)-1], ab.End-sb.Shown)
	}
}

// row is the page's first step named name.
func row(rows []livetest.Row, name string) (livetest.Row, bool) {
	for _, r := range rows {
		if r.Name == name {
			return r, true
		}
	}
	return livetest.Row{}, false
}
