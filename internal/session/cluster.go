package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/workload"
)

// ClusterRun is the cluster a run reads its pod from (--pod, or -f with
// --kubeconfig / --context): the client and what it fetched.
type ClusterRun struct {
	Client   *cluster.Client
	Resolved *cluster.Resolved
	// Namespace and Name are the pod's.
	Namespace, Name string
}

// usesCluster says whether the pod's objects come from an API server.
func (o *Options) usesCluster() bool {
	return o.Pod != "" || o.Kubeconfig != "" || o.Context != "" || o.InCluster
}

// validateCluster checks --pod against -f (one of them).
func (o *Options) validateCluster() error {
	switch {
	case o.InCluster && (o.Kubeconfig != "" || o.Context != ""):
		return Usagef("--in-cluster and --kubeconfig/--context both given: --in-cluster uses the service account of the pod podstep runs in, no kubeconfig")
	case o.Pod != "" && o.File != "":
		return Usagef("--pod and -f/--filename both given: the pod comes from the API server (--pod NAMESPACE/NAME) or from a manifest (-f), not both")
	case o.Pod == "" && o.File == "":
		return Usagef("-f/--filename is required: the pod manifest (or --scenario NAME, a built-in one: podstep scenarios; run and plan also take --pod NAMESPACE/NAME, a pod of the cluster)")
	case o.Pod != "":
		if _, err := parsePodRef(o.Pod); err != nil {
			return err
		}
	}
	return nil
}

// podRef is what --pod names: a pod, or a workload one of whose pods is
// meant, in a namespace ("": the kubeconfig context's).
type podRef struct {
	ns, kind, name string
}

// parsePodRef reads --pod: NAME, NAMESPACE/NAME, KIND/NAME or
// NAMESPACE/KIND/NAME, KIND in any of kubectl's forms (deploy, sts,
// deployment.apps, po, ...). Two parts whose first is a kind are
// KIND/NAME, as kubectl reads TYPE/NAME; a namespace that is also a kind's
// name is written NAMESPACE/pod/NAME.
func parsePodRef(s string) (podRef, error) {
	parts := strings.Split(s, "/")
	bad := func() (podRef, error) {
		return podRef{}, Usagef("--pod %q: expected NAME, NAMESPACE/NAME, KIND/NAME or NAMESPACE/KIND/NAME (KIND: po, deploy, rs, rc, sts, ds, job, cj, as kubectl names them; no NAMESPACE: the kubeconfig context's)", safe.Cut(s))
	}
	for _, p := range parts {
		if p == "" {
			return bad()
		}
	}
	switch len(parts) {
	case 1:
		return podRef{kind: workload.KindPod, name: parts[0]}, nil
	case 2:
		if k, ok := workload.KindOf(parts[0]); ok {
			return podRef{kind: k, name: parts[1]}, nil
		}
		return podRef{ns: parts[0], kind: workload.KindPod, name: parts[1]}, nil
	case 3:
		if k, ok := workload.KindOf(parts[1]); ok {
			return podRef{ns: parts[0], kind: k, name: parts[2]}, nil
		}
	}
	return bad()
}

// loadCluster reads the pod (--pod) or resolves the manifest's references
// (-f with a kubeconfig) from the API server, before any runtime is
// contacted: an *AccessError or NotFound is exit 2, an unreachable API
// server exit 3. b is the manifest (nil with --pod).
func (o *Options) loadCluster(ctx context.Context, b *manifest.Bundle, stderr io.Writer) (*manifest.Bundle, error) {
	c, err := cluster.Connect(cluster.Options{Kubeconfig: o.Kubeconfig, Context: o.Context, InCluster: o.InCluster,
		AllowExecPlugins: o.AllowExecPlugins, Stderr: stderr})
	if err != nil {
		return nil, Usagef("%v", err)
	}
	run := &ClusterRun{Client: c}
	var res *cluster.Resolved
	ro := cluster.ResolveOptions{NoTokens: o.NoTokens, Services: o.Pod != ""}
	// --node: a Node YAML file when there is one, else a Node of the cluster.
	if o.NodeFile != "" {
		if _, statErr := os.Stat(o.NodeFile); statErr != nil {
			ro.NodeName, o.NodeFile = o.NodeFile, ""
		} else {
			ro.NoNode = true
		}
	}
	if o.Pod != "" {
		ref, err := parsePodRef(o.Pod)
		if err != nil {
			return nil, err
		}
		ns, name := ref.ns, ref.name
		if ref.kind != workload.KindPod {
			ch, err := c.PodOf(ctx, ns, ref.kind, ref.name)
			if err != nil {
				return nil, clusterErr(err)
			}
			fmt.Fprintln(stderr, "podstep: "+safe.Line(ch.Why))
			name = ch.Name
		}
		pb, cp, err := c.GetPod(ctx, ns, name)
		if err != nil {
			return nil, clusterErr(err)
		}
		if res, err = c.Resolve(ctx, pb, cp, ro); err != nil {
			return nil, clusterErr(err)
		}
	} else {
		if b.Node != nil && ro.NodeName == "" {
			ro.NoNode = true // the manifest's Node, as without a cluster
		}
		if res, err = c.Resolve(ctx, b, nil, ro); err != nil {
			return nil, clusterErr(err)
		}
	}
	run.Resolved = res
	run.Namespace, run.Name = res.Bundle.Pod.Namespace, res.Bundle.Pod.Name
	o.Cluster = run
	// The node's own kubelet settings, when the node is the cluster's: read
	// before the fetched line is made, so that its count has every request.
	var nodeLine, configz string
	if res.Node != nil {
		var asked bool
		nodeLine, asked = o.nodeSettings(ctx, c, res.Node.Object.Name, nodeReady(res.Node.Object))
		if asked {
			configz = res.Node.Object.Name
		}
	}
	if stderr != nil {
		_, _ = fmt.Fprintln(stderr, "podstep: "+fetchedLine(c, res, configz))
		if nodeLine != "" {
			_, _ = fmt.Fprintln(stderr, nodeLine)
		}
	}
	return res.Bundle, nil
}

// fetchedLine says in one line what was read from where, and how many
// requests it took (every request podstep's client sent: with the node's
// configz when configz names the node it was asked of).
func fetchedLine(c *cluster.Client, r *cluster.Resolved, configz string) string {
	var parts []string
	for _, f := range r.Fetched {
		s := strings.ToLower(f.Kind) + " "
		if f.Namespace != "" && f.Kind != "TokenRequest" {
			s += f.Namespace + "/"
		}
		s += f.Name
		switch {
		case f.Kind == cluster.KindServices:
			s = fmt.Sprintf("services of namespace %s (%d, for env vars)", f.Namespace, f.Count)
		case f.Kind == "TokenRequest" && f.Found:
			s = "token for serviceaccount " + f.Namespace + "/" + f.Name
		case f.Kind == "TokenRequest":
			s = "token for serviceaccount " + f.Namespace + "/" + f.Name + " (failed: the volume will say why)"
		case !f.Found:
			s += " (not found)"
		case f.ResourceVersion != "":
			s += "@" + f.ResourceVersion
		}
		parts = append(parts, s)
	}
	if configz != "" {
		parts = append(parts, "configz of node "+configz)
	}
	pod := r.Bundle.Pod.Namespace + "/" + r.Bundle.Pod.Name
	src := "manifest " + r.Bundle.File
	if o := r.Bundle.Origin(manifest.KindPod, r.Bundle.Pod.Namespace, r.Bundle.Pod.Name); o != "" {
		src = o
	}
	line := fmt.Sprintf("pod %s from %s; fetched from API server %s (%d requests): %s", pod, src, c.Server, len(c.Requests()), strings.Join(parts, ", "))
	if len(parts) == 0 {
		line = fmt.Sprintf("pod %s from %s; nothing to fetch from API server %s", pod, src, c.Server)
	}
	return line
}

// clusterErr maps the cluster's errors to exit codes: access denied and
// objects named on the command line that are not there are bad input (2),
// an API server that does not answer is 3.
func clusterErr(err error) error {
	var (
		ae *cluster.AccessError
		ue *cluster.UnreachableError
		nf *cluster.NotFoundError
		me *manifest.Error
	)
	switch {
	case errors.As(err, &ae), errors.As(err, &nf):
		return &Error{ExitUsage, err}
	case errors.As(err, &ue):
		return &Error{ExitRuntime, err}
	case errors.As(err, &me):
		return err
	}
	return &Error{ExitRuntime, err}
}

// clusterEngine adds the cluster's token source and replay label.
func (o *Options) clusterEngine(eo *steps.Options) {
	if o.Cluster == nil {
		return
	}
	eo.Tokens = o.Cluster.Resolved.Tokens
	if cp := o.Cluster.Resolved.ClusterPod; cp != nil {
		eo.Config.ExtraLabels = map[string]string{cluster.ReplayLabel: string(cp.UID)}
		eo.Config.Source = podcfg.SourceAPI // as the kubelet's API server source: no config.hash
	}
}

// ClusterView reads what the cluster says about the pod after the run
// (nil without a cluster pod). An API server that no longer answers gives
// a view that says so and an exit-3 error; redact is the engine's.
func (o *Options) ClusterView(ctx context.Context, eng *steps.Engine) (*cluster.PodView, error) {
	if o.Cluster == nil || o.Cluster.Resolved.ClusterPod == nil {
		return nil, nil
	}
	r := o.Cluster.Resolved
	v, err := o.Cluster.Client.View(ctx, o.Cluster.Namespace, o.Cluster.Name, eng.Pod().UID, eng.Redactor().Text)
	if err != nil {
		v = &cluster.PodView{Server: o.Cluster.Client.Server, Pod: o.Cluster.Namespace + "/" + o.Cluster.Name,
			UID: string(r.ClusterPod.UID), ReplayUID: string(eng.Pod().UID), Events: []cluster.Event{}, Error: err.Error()}
	}
	v.Notes = append(v.Notes, r.Notes...)
	v.Notes = append(v.Notes, "a kubelet on the same runtime stops the sandboxes it does not know (HandlePodCleanups, every 2 s, pkg/kubelet/kubelet_pods.go): it may stop podstep's replay; podstep never stops the kubelet's")
	if err != nil {
		return v, clusterErr(err)
	}
	return v, nil
}

// ClusterSource is ClusterView for the TUI, which reads it in the
// background at the start, at the end of the run and on a key: nil
// without a cluster pod (no cluster pane). The engine's pod UID and
// redactor are safe to read while a step runs.
func (o *Options) ClusterSource(eng *steps.Engine) func(context.Context) (*cluster.PodView, error) {
	if o.Cluster == nil || o.Cluster.Resolved.ClusterPod == nil {
		return nil
	}
	return func(ctx context.Context) (*cluster.PodView, error) { return o.ClusterView(ctx, eng) }
}

// nodeReady says whether the node's Ready condition is True: only then
// does a kubelet answer for it.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
