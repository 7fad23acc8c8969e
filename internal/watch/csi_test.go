package watch

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/volume"
)

// feeder drives a watcher's hooks with calls as a proxy would hand them
// over (no socket: the attribution alone).
type feeder struct {
	t     *testing.T
	hooks proxy.Hooks
	seq   uint64
}

func (f *feeder) call(via, method string, req, resp proto.Message, err error) {
	f.t.Helper()
	f.seq++
	b, merr := proto.Marshal(req)
	if merr != nil {
		f.t.Fatal(merr)
	}
	now := time.Now()
	c := &proxy.Call{Seq: f.seq, Via: via, Method: method, Request: b, Arrived: now, Start: now}
	f.hooks.Arrived(c)
	c.Duration = time.Millisecond
	if err != nil {
		c.Err = err
	} else if c.Response, merr = proto.Marshal(resp); merr != nil {
		f.t.Fatal(merr)
	}
	f.hooks.Done(c)
}

func (f *feeder) csi(method string, req, resp proto.Message, err error) {
	f.t.Helper()
	f.call("mock.csi", "/csi.v1.Node/"+method, req, resp, err)
}

func (f *feeder) caps(n int) {
	for range n {
		f.csi(csi.NodeGetCapabilities, &csipb.NodeGetCapabilitiesRequest{}, &csipb.NodeGetCapabilitiesResponse{}, nil)
	}
}

// TestCSIAttribution: a kubelet's CSI calls through the proxy go to the
// pods they are for. A PV's stage (before any pod) is shown to both pods
// that publish its handle, each publish to the pod its target path names
// (one named by its pod info at once, one only at its RunPodSandbox); the
// NodeGetCapabilities calls go with the operation after them; the stats
// walk, registration, a republish and a stage no pod published are
// counted apart; the unstage goes to the pod that unpublished the volume
// last; a failed publish is a failed step with the kubelet's FailedMount
// event; no secret shows in anything the watcher emits.
func TestCSIAttribution(t *testing.T) {
	const (
		root         = "/var/lib/kubelet"
		handle       = "vol-shared"
		stageSecret  = "Stage-Secret-Vb83k"
		publishSecr  = "Publish-Secret-Q8v3z"
		token        = "Token-Secret-Hh27w-abcdef"
		uidA, uidB   = "uid-a", "uid-b"
		driverErrMsg = "cannot mount: bad credentials " + publishSecr
	)
	var mu sync.Mutex
	var out bytes.Buffer // every followed pod's -o json lines
	w := New(Options{Quiet: 10 * time.Millisecond, OnPod: func(p *Pod) {
		pr := report.New(lockedWriter{&mu, &out}, report.JSON)
		pr.Start(render.Runtime{}, p.Key())
		p.Subscribe(pr.Observe)
	}})
	f := &feeder{t: t, hooks: w.Hooks()}
	staging := csi.StagingPath(root, "mock.csi", handle)
	target := func(uid, vol string) string { return csi.TargetPath(root+"/pods/"+uid, vol) }
	podInfo := map[string]string{csi.PodNameKey: "a", csi.PodNamespaceKey: "default", csi.PodUIDKey: uidA, csi.EphemeralKey: "false"}
	tokens := `{"aud":{"token":"` + token + `","expirationTimestamp":"2026-11-29T16:00:00Z"}}`

	f.csi("NodeGetInfo", &csipb.NodeGetInfoRequest{}, &csipb.NodeGetInfoResponse{NodeId: "n1"}, nil)
	f.caps(3)
	f.csi(csi.NodeStageVolume, &csipb.NodeStageVolumeRequest{VolumeId: handle, StagingTargetPath: staging,
		Secrets: map[string]string{"k": stageSecret}}, &csipb.NodeStageVolumeResponse{}, nil)
	f.caps(3)
	f.csi(csi.NodePublishVolume, &csipb.NodePublishVolumeRequest{VolumeId: handle, StagingTargetPath: staging, TargetPath: target(uidA, "pv"),
		Secrets: map[string]string{"k": publishSecr}, VolumeContext: withKey(podInfo, volume.TokensKey, tokens)}, &csipb.NodePublishVolumeResponse{}, nil)
	// Pod b's publish: no pod info (its driver has no podInfoOnMount).
	f.caps(3)
	f.csi(csi.NodePublishVolume, &csipb.NodePublishVolumeRequest{VolumeId: handle, StagingTargetPath: staging, TargetPath: target(uidB, "pv")},
		&csipb.NodePublishVolumeResponse{}, nil)
	// Pod a's second volume fails, its error quoting the secret.
	f.caps(2)
	f.csi(csi.NodePublishVolume, &csipb.NodePublishVolumeRequest{VolumeId: "vol-2", TargetPath: target(uidA, "other"),
		Secrets: map[string]string{"k": publishSecr}, VolumeContext: podInfo}, nil, status.Error(codes.Internal, driverErrMsg))
	for _, uid := range []string{uidA, uidB} {
		name := strings.TrimPrefix(uid, "uid-")
		f.call("", "/runtime.v1.RuntimeService/RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(name, uid)},
			&runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb-" + name}, nil)
	}
	f.csi("NodeGetVolumeStats", &csipb.NodeGetVolumeStatsRequest{VolumeId: handle, VolumePath: target(uidA, "pv")}, &csipb.NodeGetVolumeStatsResponse{}, nil)
	f.csi("NodeGetVolumeStats", &csipb.NodeGetVolumeStatsRequest{VolumeId: handle, VolumePath: target(uidB, "pv")}, &csipb.NodeGetVolumeStatsResponse{}, nil)
	f.csi(csi.NodePublishVolume, &csipb.NodePublishVolumeRequest{VolumeId: handle, StagingTargetPath: staging, TargetPath: target(uidB, "pv")},
		&csipb.NodePublishVolumeResponse{}, nil) // the reconciler's republish
	f.csi(csi.NodeUnpublishVolume, &csipb.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: target(uidA, "pv")}, &csipb.NodeUnpublishVolumeResponse{}, nil)
	f.csi(csi.NodeUnpublishVolume, &csipb.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: target(uidB, "pv")}, &csipb.NodeUnpublishVolumeResponse{}, nil)
	f.caps(1)
	f.csi(csi.NodeUnstageVolume, &csipb.NodeUnstageVolumeRequest{VolumeId: handle, StagingTargetPath: staging}, &csipb.NodeUnstageVolumeResponse{}, nil)
	// A stage no pod publishes (its pod never came), and capabilities asked
	// for nothing.
	f.caps(1)
	f.csi(csi.NodeStageVolume, &csipb.NodeStageVolumeRequest{VolumeId: "vol-orphan", StagingTargetPath: csi.StagingPath(root, "mock.csi", "vol-orphan")},
		nil, status.Error(codes.Unavailable, "no device"))
	f.caps(2)
	w.Close()

	got := map[string][]string{}
	for _, p := range w.Pods() {
		for _, s := range p.Steps() {
			var ms []string
			for _, c := range s.Calls {
				ms = append(ms, c.Method)
			}
			got[p.Name] = append(got[p.Name], string(s.Stage)+" "+s.Name+" "+string(s.State)+" "+strings.Join(ms, ","))
		}
	}
	const ngc3 = "NodeGetCapabilities,NodeGetCapabilities,NodeGetCapabilities,"
	want := map[string][]string{
		"a": {
			"volumes volumes done " + ngc3 + "NodeStageVolume",
			"volumes volumes done " + ngc3 + "NodePublishVolume",
			"volumes volumes failed NodeGetCapabilities,NodeGetCapabilities,NodePublishVolume",
			"sandbox run-sandbox done RunPodSandbox",
			"teardown remove-dirs done NodeUnpublishVolume",
		},
		"b": {
			"volumes volumes done " + ngc3 + "NodeStageVolume",
			"volumes volumes done " + ngc3 + "NodePublishVolume",
			"sandbox run-sandbox done RunPodSandbox",
			"teardown remove-dirs done NodeUnpublishVolume",
			"teardown remove-dirs done NodeGetCapabilities,NodeUnstageVolume",
		},
	}
	for pod, ws := range want {
		if !slices.Equal(got[pod], ws) {
			t.Errorf("pod %s's steps:\n %s\nwant\n %s", pod, strings.Join(got[pod], "\n "), strings.Join(ws, "\n "))
		}
	}
	wantPolling := map[string]int{"NodeGetInfo": 1, "NodeGetVolumeStats": 2, pollRepublish: 1,
		"NodeStageVolume" + pollNoPod: 1, "NodeGetCapabilities": 3}
	if pl := w.Polling(); !mapsEqual(pl, wantPolling) {
		t.Errorf("polling %v, want %v", pl, wantPolling)
	}

	// The failed publish: FailedMount, as the kubelet's event says it.
	var a *Pod
	for _, p := range w.Pods() {
		if p.Name == "a" {
			a = p
		}
	}
	sum := a.Summary()
	found := false
	for _, e := range sum.Events {
		if e.Reason == "FailedMount" && strings.HasPrefix(e.Message, `MountVolume.SetUp failed for volume "other" : rpc error: code = Internal desc = cannot mount`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no FailedMount event for the failed publish: %+v", sum.Events)
	}

	// Nothing emitted holds a secret.
	mu.Lock()
	defer mu.Unlock()
	var all strings.Builder
	all.Write(out.Bytes())
	b, _ := json.Marshal(sum)
	all.Write(b)
	if !strings.Contains(all.String(), `"NodeStageVolume"`) {
		t.Fatalf("the pods' JSON lines have no CSI call:\n%s", all.String())
	}
	for _, s := range []string{stageSecret, publishSecr, token} {
		if strings.Contains(all.String(), s) {
			t.Errorf("the secret %q shows in what the watcher emitted", s)
		}
	}
	if !strings.Contains(all.String(), "bad credentials \\u003credacted\\u003e") {
		t.Errorf("the driver's error is not shown masked")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func withKey(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCSITarget parses the kubelet's publish target paths.
func TestCSITarget(t *testing.T) {
	for _, tc := range []struct {
		path, uid, name string
		ok              bool
	}{
		{"/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv-1/mount", "u1", "pv-1", true},
		{"/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv-1/mount/", "u1", "pv-1", true},
		{"/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv-1", "", "", false},
		{"/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/x/mount", "", "", false},
		{"/var/lib/kubelet/plugins/kubernetes.io/csi/d/abc/globalmount", "", "", false},
		{"/mnt/x/mount", "", "", false},
	} {
		uid, name, ok := csiTarget(tc.path)
		if uid != tc.uid || name != tc.name || ok != tc.ok {
			t.Errorf("csiTarget(%q) = %q, %q, %v; want %q, %q, %v", tc.path, uid, name, ok, tc.uid, tc.name, tc.ok)
		}
	}
}
