package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
)

// SpecSource is where `podstep proxy` reads the desired spec of each pod
// it follows, since the CRI does not carry it (which container is an init
// container, a sidecar's restartPolicy, the env names and mounts asked
// for): the API server (--kubeconfig, APISpecs) or a standalone kubelet's
// static pod manifests (--manifest, FileSpecs).
type SpecSource interface {
	// Spec returns the pod the kubelet's sandbox metadata names (namespace,
	// name, UID) and where it came from, for the output. An error says why
	// there is none; the watcher then infers, as without a source.
	Spec(ctx context.Context, ns, name, uid string) (*corev1.Pod, string, error)
	// String says what the source is, for the start line.
	String() string
}

// mirrorAnnotation is the annotation of a static pod's mirror pod: the
// static pod's UID, the one its sandbox carries (kubetypes.ConfigMirrorAnnotationKey).
const mirrorAnnotation = "kubernetes.io/config.mirror"

// APISpecs reads each pod with one GET from the API server (get pods,
// deploy/clusterrole.yaml), never a list.
type APISpecs struct {
	Client *cluster.Client
}

// Spec GETs the pod and checks it is the sandbox's: the same UID, or the
// mirror pod of the static pod with that UID.
func (a APISpecs) Spec(ctx context.Context, ns, name, uid string) (*corev1.Pod, string, error) {
	pod, from, err := a.Client.Pod(ctx, ns, name)
	if err != nil {
		return nil, "", err
	}
	switch {
	case string(pod.UID) == uid:
	case pod.Annotations[mirrorAnnotation] == uid:
		from += ", the mirror pod of a static pod"
	default:
		return nil, "", fmt.Errorf("the API server %s has pod %s/%s with UID %s, not the sandbox's %s (deleted and created again?)",
			a.Client.Server, ns, name, pod.UID, uid)
	}
	return pod, from, nil
}

func (a APISpecs) String() string {
	s := "the API server " + a.Client.Server
	if a.Client.Context != "" {
		s += " (context " + a.Client.Context + ")"
	}
	return s
}

// FileSpecs reads a standalone kubelet's static pods: one manifest file, or
// every file of a directory as the kubelet's file source reads it
// (sourceFile.extractFromDir, pkg/kubelet/config/file.go: files whose name
// starts with "." are ignored). Each file is parsed as `podstep run -f`
// parses it (manifest.Load). The directory is read again for each new pod:
// static pods are dropped in while the proxy runs.
type FileSpecs struct {
	Path string
}

// CheckFileSpecs checks --manifest before anything listens: the path is
// there, and the manifests in it now parse.
func CheckFileSpecs(path string) error {
	files, err := FileSpecs{Path: path}.files()
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := manifest.Load(f); err != nil {
			return err
		}
	}
	return nil
}

// files are the manifest files under Path, in name order.
func (f FileSpecs) files() ([]string, error) {
	fi, err := os.Stat(f.Path)
	if err != nil {
		return nil, fmt.Errorf("--manifest %s: %w (expected a static pod manifest, or the kubelet's staticPodPath directory)", f.Path, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return []string{f.Path}, nil
	}
	entries, err := os.ReadDir(f.Path)
	if err != nil {
		return nil, fmt.Errorf("--manifest %s: %w", f.Path, err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		out = append(out, filepath.Join(f.Path, e.Name()))
	}
	sort.Strings(out)
	return out, nil
}

// Spec finds the static pod the sandbox is for. The kubelet names a static
// pod NAME-NODENAME in its namespace ("default" when it has none), and
// gives it a UID hashed from the file and the node (applyDefaults,
// pkg/kubelet/config/common.go): the file's pod whose name is the
// sandbox's, or its prefix followed by "-", the longest such name.
func (f FileSpecs) Spec(_ context.Context, ns, name, _ string) (*corev1.Pod, string, error) {
	files, err := f.files()
	if err != nil {
		return nil, "", err
	}
	var best *manifest.Bundle
	var bad []string
	for _, file := range files {
		b, err := manifest.Load(file)
		if err != nil {
			bad = append(bad, filepath.Base(file))
			continue
		}
		p := b.Pod
		if p.Namespace != ns || (p.Name != name && !strings.HasPrefix(name, p.Name+"-")) {
			continue
		}
		if best == nil || len(p.Name) > len(best.Pod.Name) {
			best = b
		}
	}
	if best == nil {
		msg := fmt.Sprintf("no static pod manifest under %s names pod %s/%s", f.Path, ns, name)
		if len(bad) > 0 {
			msg += fmt.Sprintf(" (%d not valid: %s)", len(bad), strings.Join(bad, ", "))
		}
		return nil, "", errors.New(msg)
	}
	return best.Pod, "the manifest " + best.File, nil
}

func (f FileSpecs) String() string { return "the static pod manifests at " + f.Path }

// podSpec is what the watcher knows of a pod's desired spec.
type podSpec struct {
	ready   chan struct{} // closed once the read is done (pod or err)
	pod     *corev1.Pod
	from    string
	err     error
	once    sync.Once
	started time.Time // when the read began: awaitSpec waits SpecTimeout from it
}

// failed says whether the read is done and found no spec (w.mu held).
func (ps *podSpec) failed() bool {
	select {
	case <-ps.ready:
		return ps.err != nil
	default:
		return false
	}
}

// retrySpec reads p's spec again when the last read found none, as the
// kubelet creates a sandbox for p (w.mu held): a kubelet restarted with a
// stale sandbox of a static pod on the runtime is looked up at the first
// ListPodSandbox, before it has read its manifests back; the pod's spec
// is there by the time it makes the pod's sandbox again.
func (w *Watcher) retrySpec(p *Pod) {
	if p.followed && w.opts.Specs != nil && p.desired != nil && p.desired.failed() {
		w.fetchSpec(p)
	}
}

// SpecNote is what OnSpec says of a followed pod's spec, once per pod.
type SpecNote struct {
	// From says where the spec came from ("the API server URL
	// (resourceVersion N)", "the manifest FILE"); "" when there is none.
	From string
	// Err says why there is none: the pod's init containers are then
	// inferred, as without a source.
	Err error
}

// fetchSpec reads p's spec in the background (w.mu held): the kubelet's
// RunPodSandbox is not held for it. Its first CreateContainer waits for the
// answer, at most SpecTimeout after the read began (awaitSpec).
func (w *Watcher) fetchSpec(p *Pod) {
	ps := &podSpec{ready: make(chan struct{}), started: w.opts.Now()}
	p.desired = ps
	ns, name, uid := p.Namespace, p.Name, p.UID
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.SpecTimeout)
		defer cancel()
		go func() {
			select {
			case <-w.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		pod, from, err := w.opts.Specs.Spec(ctx, ns, name, uid)
		if err == nil && pod == nil {
			err = errors.New("no pod")
		}
		w.mu.Lock()
		p.setSpec(pod, from, err)
		w.mu.Unlock()
		w.deliver()
	}()
}

// awaitSpec waits for the spec of the pod of sandbox id, if it is being
// read, before its container is staged: at most SpecTimeout in all.
func (w *Watcher) awaitSpec(sandboxID string) {
	w.mu.Lock()
	p := w.bySandbox[sandboxID]
	var ps *podSpec
	var deadline time.Time
	if p != nil && p.desired != nil {
		ps, deadline = p.desired, p.desired.started.Add(w.opts.SpecTimeout)
	}
	w.mu.Unlock()
	if ps == nil {
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ps.ready:
	case <-t.C:
	case <-w.stop:
	}
}

// setSpec takes the spec's answer (w.mu held): the containers it names as
// init containers are staged as such from now on, in the steps still open
// too; the Secret-sourced env names are masked.
func (p *Pod) setSpec(pod *corev1.Pod, from string, err error) {
	ps := p.desired
	ps.once.Do(func() {
		ps.pod, ps.from, ps.err = pod, from, err
		close(ps.ready)
	})
	if p.w.pods[p.UID] == p {
		p.w.specNotes = append(p.w.specNotes, specQueued{p, SpecNote{From: from, Err: err}})
	}
	if err != nil {
		return
	}
	p.w.red.AddSecretEnv(secretEnvNames(pod)...)
	for _, k := range p.containers {
		k.init = p.isInit(k.name)
	}
	for _, o := range p.openSteps() {
		if o.container != "" && p.isInit(o.container) && o.step.Stage == steps.StageContainers {
			o.step.Stage = steps.StageInit
		}
	}
	p.prev = p.snapshot()
}

// specPod is the desired spec, if it was read (w.mu held).
func (p *Pod) specPod() *corev1.Pod {
	if p.desired == nil {
		return nil
	}
	select {
	case <-p.desired.ready:
		return p.desired.pod
	default:
		return nil
	}
}

// isInit says whether container name is an init container: the spec's
// word when it was read, else what was inferred (see the package comment).
func (p *Pod) isInit(name string) bool {
	if sp := p.specPod(); sp != nil {
		_, init := specContainer(sp, name)
		return init
	}
	k := p.containers[name]
	return k != nil && k.init
}

// specContainer is the container name of the spec, and whether it is an
// init container.
func specContainer(pod *corev1.Pod, name string) (*corev1.Container, bool) {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], true
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], false
		}
	}
	return nil, false
}

// secretEnvNames are the env names whose values come from a Secret
// (valueFrom.secretKeyRef): masked in what the proxy shows.
func secretEnvNames(pod *corev1.Pod) []string {
	var out []string
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					out = append(out, e.Name)
				}
			}
		}
	}
	return out
}

type specQueued struct {
	pod  *Pod
	note SpecNote
}

// compareSpec notes how the config the kubelet sent for a container
// differs from the desired spec (w.mu held; cfg as sent, the text shown
// is redacted).
func (p *Pod) compareSpec(cfg *runtimeapi.ContainerConfig) {
	sp := p.specPod()
	if sp == nil {
		return
	}
	name := cfg.GetMetadata().GetName()
	c, init := specContainer(sp, name)
	if p.vsSent == nil {
		p.vsSent = map[string]string{}
	}
	if c == nil {
		p.vsSent[name] = "the spec has no container " + name
		return
	}
	p.vsSent[name] = specVsSent(c, init, cfg, p.config, p.w.red.Text)
}

// specDetails adds what the spec says of a create step's container: where
// the spec came from (or why there is none), whether it is an init
// container, and how what was sent differs from it (w.mu held).
func (p *Pod) specDetails(name string, det func(k, v string)) {
	if p.desired == nil {
		return
	}
	sp := p.specPod()
	if sp == nil {
		why := "not read yet"
		select {
		case <-p.desired.ready:
			why = safe.Line(p.desired.err.Error())
		default:
		}
		det("spec", "none ("+why+"); init containers inferred")
		return
	}
	det("spec", p.desired.from)
	for i, c := range sp.Spec.InitContainers {
		if c.Name != name {
			continue
		}
		v := fmt.Sprintf("spec.initContainers[%d]", i)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			v += ", a sidecar (restartPolicy Always)"
		}
		det("init", v)
	}
	if d, ok := p.vsSent[name]; ok {
		if d == "" {
			d = "as the spec (image, command, args, workingDir, env names, mounts, ports)"
		}
		det(report.SpecVsSent, d)
	}
}
