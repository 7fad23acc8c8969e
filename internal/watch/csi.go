package watch

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/volume"
)

// A kubelet's CSI calls, through a driver's socket the proxy took over
// (`podstep proxy --csi DRIVER`), become steps of the pods they are for:
//
//   - NodePublishVolume and NodeUnpublishVolume name the pod in their
//     target path, <root>/pods/UID/volumes/kubernetes.io~csi/NAME/mount
//     (csiMountMgr.GetPath, pkg/volume/csi/csi_mounter.go). A pod podstep
//     has not seen yet (the kubelet mounts volumes before RunPodSandbox)
//     is made from the pod-info keys of the volume context when the
//     CSIDriver has podInfoOnMount; else its calls wait until its
//     RunPodSandbox names it.
//   - NodeStageVolume and NodeUnstageVolume name a volume, not a pod:
//     <root>/plugins/kubernetes.io/csi/DRIVER/sha256(handle)/globalmount is
//     shared by every pod of the volume. A stage is shown in the story of
//     each followed pod that then publishes that volume handle; an unstage
//     in that of the pod that unpublished it last. Neither: node-level.
//   - NodeGetCapabilities calls belong to the stage, publish or unstage
//     that follows them on the same driver (the kubelet asks before each:
//     nodeSupportsCapability, csi_client.go).
//   - NodeGetVolumeStats (the volume stats' periodic walk), NodeGetInfo
//     (registration) and a NodePublishVolume for a target already published
//     (the reconciler's republish, requiresRepublish) are counted with the
//     node-level polling, not steps.
//
// Setup calls are steps "volumes" of the volumes stage, teardown calls
// steps "remove-dirs" of the teardown stage, as in `podstep run`.

// capsWindow is how long a NodeGetCapabilities waits for the operation it
// belongs to; older ones are node-level.
const capsWindow = 10 * time.Second

// maxStaged bounds the stage operations remembered per volume handle.
const maxStaged = 8

// maxCaps bounds the NodeGetCapabilities calls waiting per driver.
const maxCaps = 16

// maxPendingPods bounds the pods not seen yet whose CSI calls are kept.
const maxPendingPods = 1000

// The counted (not shown step by step) kinds of CSI calls.
const (
	pollRepublish = "NodePublishVolume (republish)"
	pollNoPod     = " (no followed pod)"
)

// csiState is what the watcher knows of CSI volumes (w.mu held).
type csiState struct {
	caps      map[string][]cri.Call // by driver: NodeGetCapabilities answered, waiting for their operation
	staged    map[string][]*csiOp   // by volume handle: its stage operations
	published map[string]string     // target path → volume handle, published and not unpublished
	lastUnpub map[string]*Pod       // by volume handle: the pod that unpublished it last
	pending   map[string][]*csiOp   // by pod UID: operations of pods not seen yet
}

// csiOp is one CSI operation (its NodeGetCapabilities calls and the call
// itself), kept to be shown in a pod's story later.
type csiOp struct {
	kind   steps.Kind
	title  string
	calls  []cri.Call
	handle string
	given  map[*Pod]bool // stage operations: the pods already shown it
}

// csiCall is what classify decided about a CSI call.
type csiCall struct {
	driver string
	method string
	uid    string // the pod's UID from a target or volume path
	volume string // the volume's name (publish, unpublish)
	handle string
	target string
	caps   []cri.Call // the NodeGetCapabilities calls before it
	poll   string     // counted, not a step: the polling key
	title  string
}

// csiTarget parses a publish target or volume path,
// .../pods/UID/volumes/kubernetes.io~csi/NAME/mount, into the pod's UID
// and the volume's name.
func csiTarget(path string) (uid, name string, ok bool) {
	path = filepath.Clean(path)
	if filepath.Base(path) != "mount" {
		return "", "", false
	}
	vol := filepath.Dir(path)
	name = filepath.Base(vol)
	plugin := filepath.Dir(vol)
	if filepath.Base(plugin) != "kubernetes.io~csi" || filepath.Base(filepath.Dir(plugin)) != "volumes" {
		return "", "", false
	}
	podDir := filepath.Dir(filepath.Dir(plugin))
	uid = filepath.Base(podDir)
	if filepath.Base(filepath.Dir(podDir)) != "pods" || uid == "" || name == "" {
		return "", "", false
	}
	return uid, name, true
}

// csiSecrets tells the redactor the secrets of a CSI request: its
// csi_secret maps' values (masked whole by csi.MaskSecrets; by value too,
// for a driver's error quoting one) and the service-account tokens the
// kubelet puts under csi.storage.k8s.io/serviceAccount.tokens, in the
// volume context or the secrets (podServiceAccountTokenAttrs,
// csi_mounter.go): masked by value as `podstep run` masks the tokens it
// mints.
func (w *Watcher) csiSecrets(req proto.Message) {
	var secrets, vctx map[string]string
	switch r := req.(type) {
	case *csipb.NodeStageVolumeRequest:
		secrets, vctx = r.GetSecrets(), r.GetVolumeContext()
	case *csipb.NodePublishVolumeRequest:
		secrets, vctx = r.GetSecrets(), r.GetVolumeContext()
	case *csipb.NodeExpandVolumeRequest:
		secrets = r.GetSecrets()
	default:
		return
	}
	w.red.AddSecrets(csi.Secrets(secrets)...)
	for _, m := range []map[string]string{vctx, secrets} {
		if v, ok := m[volume.TokensKey]; ok && !w.tokensSeen(v) {
			var tokens map[string]struct {
				Token string `json:"token"`
			}
			if json.Unmarshal([]byte(v), &tokens) == nil {
				for _, t := range tokens {
					w.red.AddSecrets(t.Token)
				}
			} else {
				w.red.AddSecrets(v) // not the kubelet's form: the whole value
			}
		}
	}
}

// tokensSeen says whether the tokens value v was read before (the
// kubelet sends the same tokens until they are renewed: each is parsed
// once); it remembers v.
func (w *Watcher) tokensSeen(v string) bool {
	w.tokensMu.Lock()
	defer w.tokensMu.Unlock()
	if w.tokens[v] {
		return true
	}
	if w.tokens == nil || len(w.tokens) >= 1024 {
		w.tokens = map[string]bool{}
	}
	w.tokens[v] = true
	return false
}

// classifyCSI decides the pod and step of a call through a CSI driver's
// socket (w.mu held).
func (w *Watcher) classifyCSI(c *proxy.Call, req proto.Message, info *callInfo) {
	if w.csi.caps == nil {
		w.csi = csiState{caps: map[string][]cri.Call{}, staged: map[string][]*csiOp{}, published: map[string]string{},
			lastUnpub: map[string]*Pod{}, pending: map[string][]*csiOp{}}
	}
	k := &csiCall{driver: c.Via, method: c.Name()}
	info.csi = k
	driverWord := " (CSI driver " + c.Via + ")"
	switch r := req.(type) {
	case *csipb.NodeGetCapabilitiesRequest:
		return // waits for its operation (csiDone)
	case *csipb.NodeStageVolumeRequest:
		k.handle, k.target = r.GetVolumeId(), r.GetStagingTargetPath()
		k.title = "NodeStageVolume " + k.handle + driverWord
		info.kind = steps.KindVolumes
	case *csipb.NodeUnstageVolumeRequest:
		k.handle, k.target = r.GetVolumeId(), r.GetStagingTargetPath()
		k.title = "NodeUnstageVolume " + k.handle + driverWord
		info.kind = steps.KindRemoveDirs
		if p := w.csi.lastUnpub[k.handle]; p != nil && w.pods[p.UID] == p {
			info.pod = p
		}
	case *csipb.NodePublishVolumeRequest:
		k.handle, k.target = r.GetVolumeId(), r.GetTargetPath()
		k.uid, k.volume, _ = csiTarget(k.target)
		k.title = "NodePublishVolume " + k.volume + driverWord
		info.kind = steps.KindVolumes
		if w.csi.published[k.target] == k.handle && k.handle != "" {
			k.poll = pollRepublish
			break
		}
		info.pod = w.pods[k.uid]
		if vc := r.GetVolumeContext(); info.pod == nil && k.uid != "" && vc[csi.PodUIDKey] == k.uid && vc[csi.PodNameKey] != "" {
			// podInfoOnMount: the pod is named before its sandbox exists.
			info.pod = w.podOf(&runtimeapi.PodSandboxMetadata{Uid: k.uid, Namespace: vc[csi.PodNamespaceKey], Name: vc[csi.PodNameKey]}, nil)
		}
		if info.pod != nil {
			w.giveStaged(info.pod, k.handle)
		}
	case *csipb.NodeUnpublishVolumeRequest:
		k.handle, k.target = r.GetVolumeId(), r.GetTargetPath()
		k.uid, k.volume, _ = csiTarget(k.target)
		k.title = "NodeUnpublishVolume " + k.volume + driverWord
		info.kind = steps.KindRemoveDirs
		info.pod = w.pods[k.uid]
	case *csipb.NodeExpandVolumeRequest:
		k.handle = r.GetVolumeId()
		k.uid, k.volume, _ = csiTarget(r.GetVolumePath())
		k.title = "NodeExpandVolume " + k.volume + driverWord
		info.kind = steps.KindVolumes
		info.pod = w.pods[k.uid]
	default: // NodeGetVolumeStats (after its NodeGetCapabilities: csi_metrics.go), NodeGetInfo, others: node-level
		k.poll = c.Name()
	}
	k.caps = w.takeCaps(k.driver)
}

// takeCaps hands out driver's NodeGetCapabilities calls to the operation
// arriving; those older than capsWindow are counted as polling (w.mu held).
func (w *Watcher) takeCaps(driver string) []cri.Call {
	all := w.csi.caps[driver]
	delete(w.csi.caps, driver)
	now := w.opts.Now()
	var out []cri.Call
	for _, c := range all {
		if now.Sub(c.Start) > capsWindow {
			w.polling[c.Method]++
			continue
		}
		out = append(out, c)
	}
	return out
}

// giveStaged shows p the stage operations of handle it has not been shown
// (w.mu held): the volume p publishes was staged for it (or before it).
func (w *Watcher) giveStaged(p *Pod, handle string) {
	for _, op := range w.csi.staged[handle] {
		if op.given[p] {
			continue
		}
		op.given[p] = true
		p.doneStep(op)
	}
}

// csiArrived puts a CSI call of a pod in its step (w.mu held).
func (p *Pod) csiArrived(info *callInfo, c *proxy.Call, shown proto.Message) *openStep {
	o := p.callArrived(info, c, shown)
	k := info.csi
	if len(o.step.Calls) == 0 {
		o.step.Title = k.title
		if m := csiMirrors[k.method]; m != "" {
			o.step.Mirrors = m
		}
	}
	if len(k.caps) > 0 && len(o.step.Calls) == 0 {
		o.step.Calls = append(o.step.Calls, k.caps...)
		if k.caps[0].Start.Before(o.step.Started) {
			o.step.Started = k.caps[0].Start
		}
	}
	return o
}

// csiDone handles the answer to a CSI call that is no pod's step yet
// (w.mu held): NodeGetCapabilities waits for its operation, a stage is
// kept for the pods that publish its volume, a publish for a pod not seen
// yet until it is; the rest is counted.
func (w *Watcher) csiDone(info *callInfo, call cri.Call) {
	k := info.csi
	switch {
	case k.method == csi.NodeGetCapabilities:
		l := w.csi.caps[k.driver]
		if len(l) >= maxCaps {
			// No operation came for these: node-level.
			w.polling[csi.NodeGetCapabilities] += len(l) - maxCaps/2
			l = append(l[:0], l[len(l)-maxCaps/2:]...)
		}
		l = append(l, call)
		w.csi.caps[k.driver] = l
	case k.poll != "":
		w.polling[k.poll]++
		w.polling[csi.NodeGetCapabilities] += len(k.caps)
	case k.method == csi.NodeStageVolume:
		op := &csiOp{kind: info.kind, title: k.title, calls: append(k.caps, call), handle: k.handle, given: map[*Pod]bool{}}
		l := w.csi.staged[k.handle]
		l = append(l, op)
		if len(l) > maxStaged {
			l = l[len(l)-maxStaged:]
		}
		w.csi.staged[k.handle] = l
	case k.method == csi.NodePublishVolume && k.uid != "":
		if call.Err == nil {
			w.csi.published[k.target] = k.handle
		}
		op := &csiOp{kind: info.kind, title: k.title, calls: append(k.caps, call), handle: k.handle}
		if len(w.csi.pending[k.uid]) >= 4*maxStaged || len(w.csi.pending) >= maxPendingPods && w.csi.pending[k.uid] == nil {
			// Bounded: a kubelet whose pods' volumes never mount keeps
			// trying; the oldest calls are kept, the rest counted.
			w.polling[k.method+pollNoPod]++
			break
		}
		w.csi.pending[k.uid] = append(w.csi.pending[k.uid], op)
	default:
		for _, c := range k.caps {
			w.polling[c.Method]++
		}
		w.polling[k.method+pollNoPod]++
		if k.method == csi.NodeUnpublishVolume {
			delete(w.csi.published, k.target)
		}
	}
}

// csiApply updates what the watcher knows from a pod's CSI answer (w.mu held).
func (p *Pod) csiApply(info *callInfo, err error) {
	k, w := info.csi, p.w
	switch k.method {
	case csi.NodePublishVolume:
		if err == nil {
			w.csi.published[k.target] = k.handle
			return
		}
		p.record(corev1.EventTypeWarning, reason.FailedMountVolume, "",
			fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s", k.volume, errText(err)))
	case csi.NodeStageVolume:
		if err != nil {
			p.record(corev1.EventTypeWarning, reason.FailedMountVolume, "",
				fmt.Sprintf("MountVolume.MountDevice failed for volume %q : %s", k.handle, errText(err)))
		}
	case csi.NodeUnpublishVolume:
		if err == nil {
			delete(w.csi.published, k.target)
			w.csi.lastUnpub[k.handle] = p
		}
	case csi.NodeUnstageVolume:
		if err == nil {
			delete(w.csi.lastUnpub, k.handle)
			delete(w.csi.staged, k.handle)
		}
	}
}

// errText is a failed call's error as the kubelet's message quotes it.
func errText(err error) string {
	return "rpc error: code = " + status.Code(err).String() + " desc = " + status.Convert(err).Message()
}

// forgetCSI drops what the CSI state holds of a forgotten pod (w.mu held).
func (w *Watcher) forgetCSI(p *Pod) {
	for h, x := range w.csi.lastUnpub {
		if x == p {
			delete(w.csi.lastUnpub, h)
		}
	}
	for _, ops := range w.csi.staged {
		for _, op := range ops {
			delete(op.given, p)
		}
	}
}

// closeCSI counts what no pod's story took when the proxy stops: the
// NodeGetCapabilities calls no operation followed, stages no followed pod
// published, publishes of pods never seen (w.mu held).
func (w *Watcher) closeCSI() {
	for d, calls := range w.csi.caps {
		w.polling[csi.NodeGetCapabilities] += len(calls)
		delete(w.csi.caps, d)
	}
	for h, ops := range w.csi.staged {
		for _, op := range ops {
			if len(op.given) == 0 {
				w.polling[csi.NodeStageVolume+pollNoPod]++
				w.polling[csi.NodeGetCapabilities] += len(op.calls) - 1
			}
		}
		delete(w.csi.staged, h)
	}
	for uid, ops := range w.csi.pending {
		for _, op := range ops {
			w.polling[csi.NodePublishVolume+pollNoPod]++
			w.polling[csi.NodeGetCapabilities] += len(op.calls) - 1
		}
		delete(w.csi.pending, uid)
	}
}

// flushCSI shows a pod first seen now the CSI operations it had before
// (w.mu held).
func (w *Watcher) flushCSI(p *Pod) {
	ops := w.csi.pending[p.UID]
	if len(ops) == 0 {
		return
	}
	delete(w.csi.pending, p.UID)
	for _, op := range ops {
		w.giveStaged(p, op.handle)
		p.doneStep(op)
	}
}

// doneStep adds a step whose calls are all answered (w.mu held).
func (p *Pod) doneStep(op *csiOp) {
	if len(op.calls) == 0 {
		return
	}
	slot := slotOf(op.kind, "")
	prev := p.open[slot]
	o := p.openStep(op.kind, "", op.calls[0].Start)
	if prev != nil {
		p.open[slot] = prev
	} else {
		delete(p.open, slot)
	}
	o.step.Title = op.title
	if m := csiMirrors[op.calls[len(op.calls)-1].Method]; m != "" {
		o.step.Mirrors = m
	}
	for _, c := range op.calls {
		c.Request, c.Response = o.keepBody(c.Request), o.keepBody(c.Response)
		o.step.Calls = append(o.step.Calls, c)
	}
	if !p.followed {
		p.w.polling[OtherPods] += len(op.calls)
	}
	p.closeStep(o)
}

// csiResult says what a CSI step did (w.mu held).
func csiResult(s *steps.Step, failed *cri.Call) steps.Result {
	var r steps.Result
	det := func(k, v string) { r.Details = append(r.Details, steps.Detail{Key: k, Value: v}) }
	var last *cri.Call
	for i := range s.Calls {
		if s.Calls[i].Method != csi.NodeGetCapabilities {
			last = &s.Calls[i]
		}
	}
	if last == nil {
		r.Summary = "NodeGetCapabilities"
		return r
	}
	var what, path string
	switch q := last.Request.(type) {
	case *csipb.NodeStageVolumeRequest:
		what, path = "staged volume "+q.GetVolumeId(), q.GetStagingTargetPath()
		det("staging path", path)
	case *csipb.NodeUnstageVolumeRequest:
		what, path = "unstaged volume "+q.GetVolumeId(), q.GetStagingTargetPath()
		det("staging path", path)
	case *csipb.NodePublishVolumeRequest:
		_, name, _ := csiTarget(q.GetTargetPath())
		what = "published volume " + name
		det("target", q.GetTargetPath())
		det("volume ID", q.GetVolumeId())
		if sp := q.GetStagingTargetPath(); sp != "" {
			det("staging path", sp)
		}
	case *csipb.NodeUnpublishVolumeRequest:
		_, name, _ := csiTarget(q.GetTargetPath())
		what = "unpublished volume " + name
		det("target", q.GetTargetPath())
	case *csipb.NodeExpandVolumeRequest:
		what = "expanded volume " + q.GetVolumeId()
	default:
		what = last.Method
	}
	if failed != nil {
		r.Summary = last.Method + " failed"
		r.Reason, r.Message, r.Err = reason.FailedMountVolume, failed.ErrorMessage(), failed.Err
		if s.Stage == steps.StageTeardown {
			r.Reason = "FailedUnMount"
		}
		return r
	}
	r.Summary = what
	return r
}

// csiMirrors names the kubelet code that sends each CSI call (v1.37.0,
// pkg/volume/csi), a step's Mirrors.
var csiMirrors = map[string]string{
	csi.NodeStageVolume:     "operationGenerator.GenerateMountVolumeFunc → csiAttacher.MountDevice (pkg/volume/csi/csi_attacher.go)",
	csi.NodeUnstageVolume:   "operationGenerator.GenerateUnmountDeviceFunc → csiAttacher.UnmountDevice (pkg/volume/csi/csi_attacher.go)",
	csi.NodePublishVolume:   "operationGenerator.GenerateMountVolumeFunc → csiMountMgr.SetUpAt (pkg/volume/csi/csi_mounter.go)",
	csi.NodeUnpublishVolume: "operationGenerator.GenerateUnmountVolumeFunc → csiMountMgr.TearDownAt (pkg/volume/csi/csi_mounter.go)",
	"NodeExpandVolume":      "operationGenerator.GenerateExpandInUseVolumeFunc → csiPlugin.NodeExpand (pkg/volume/csi/expander.go)",
}

// isCSI says whether a call came through a CSI driver's socket.
func isCSI(c *proxy.Call) bool { return c.Via != "" || strings.HasPrefix(c.Method, "/csi.") }
