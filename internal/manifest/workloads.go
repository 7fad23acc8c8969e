package manifest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/workload"
)

// KindList is a v1 List: its items are read one by one, as kubectl does.
const KindList = "List"

// Options change how a file is read.
type Options struct {
	// Select is KIND/NAME in kubectl's forms (deploy/web, sts/db, pod/x):
	// the Pod or workload of the file to replay, when it has several.
	Select string
	// Now is the time a CronJob's first job is scheduled after (zero:
	// the current time).
	Now time.Time
}

// candidate is a Pod or workload document of the file, decoded only once
// chosen (a file may hold workloads podstep is not asked to replay).
type candidate struct {
	ref       workload.Ref
	doc       int
	raw, js   []byte
	apiVer    any
	apiString string
}

func (p *parser) candidate(kind, apiVersion string, apiVer any, raw, js []byte) error {
	p.cands = append(p.cands, candidate{ref: workload.Ref{Kind: kind, Name: p.name}, doc: p.doc,
		raw: raw, js: js, apiVer: apiVer, apiString: apiVersion})
	return nil
}

// list reads a v1 List's items as documents of their own.
func (p *parser) list(js []byte) error {
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &l); err != nil {
		return p.errf("items", "invalid value: %v; expected a list of objects", err)
	}
	p.kind = KindList
	for i, it := range l.Items {
		p.name = ""
		if err := p.document(it, it); err != nil {
			if e, ok := err.(*Error); ok {
				in := func(f string) string {
					if f == "" || strings.HasPrefix(f, "items[") {
						return f
					}
					return fmt.Sprintf("items[%d].%s", i, f)
				}
				e.Field = in(e.Field)
				for j := range e.Also {
					e.Also[j].Field = in(e.Also[j].Field)
				}
			}
			return err
		}
	}
	return nil
}

// skip notes a kind podstep does not use (Service, Ingress, RBAC, CRDs, ...).
func (p *parser) skip(kind, apiVersion string) {
	what := kind
	if p.name != "" {
		what += " " + fmt.Sprintf("%q", shortText(p.name))
	}
	if apiVersion != "" {
		what += " (" + apiVersion + ")"
	}
	p.bundle.Notes = append(p.bundle.Notes, fmt.Sprintf("document %d: skipped %s: podstep replays one pod and does not use this kind", p.doc, what))
}

// choose picks the Pod or workload to replay and decodes it.
func (p *parser) choose() error {
	var sel *workload.Ref
	if p.opts.Select != "" {
		r, err := workload.ParseRef(p.opts.Select)
		if err != nil {
			return &Error{File: p.file, Field: "--select", Msg: err.Error()}
		}
		sel = &r
	}
	var names []string
	for _, c := range p.cands {
		names = append(names, c.ref.String())
	}
	switch {
	case len(p.cands) == 0:
		return p.errf("", "no Pod found; expected a document with apiVersion: v1 and kind: Pod, or a workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob)")
	case sel != nil:
		for _, c := range p.cands {
			if c.ref == *sel {
				return p.decodeCandidate(c)
			}
		}
		return &Error{File: p.file, Field: "--select", Msg: fmt.Sprintf("no %s in the file; expected one of: %s", sel, strings.Join(names, ", "))}
	case len(p.cands) > 1:
		sort.Strings(names)
		return &Error{File: p.file, Msg: fmt.Sprintf("%d pods and workloads: %s; expected --select KIND/NAME (such as --select %s) to choose the one to replay",
			len(names), strings.Join(names, ", "), selectExample(p.cands[0].ref))}
	}
	return p.decodeCandidate(p.cands[0])
}

// selectExample writes ref with kubectl's short kind (deploy/web).
func selectExample(r workload.Ref) string {
	short := map[string]string{workload.KindPod: "pod", workload.KindDeployment: "deploy", workload.KindReplicaSet: "rs",
		workload.KindReplicationController: "rc", workload.KindStatefulSet: "sts", workload.KindDaemonSet: "ds",
		workload.KindJob: "job", workload.KindCronJob: "cj"}
	return short[r.Kind] + "/" + r.Name
}

func (p *parser) decodeCandidate(c candidate) error {
	p.doc, p.kind, p.name = c.doc, c.ref.Kind, c.ref.Name
	want := workload.APIVersion(c.ref.Kind)
	old := ""
	switch {
	case c.apiVer == nil:
		return p.errf("apiVersion", "required value; expected %q", want)
	case c.apiString != want:
		removed, ok := workload.Removed(c.ref.Kind, c.apiString)
		if !ok {
			return p.errf("apiVersion", "unsupported value %s; expected %q", jsonText(c.apiVer), want)
		}
		old = removed
	}
	if c.ref.Kind == KindPod {
		pod := &corev1.Pod{}
		if err := p.decode(c.js, pod); err != nil {
			return err
		}
		setPodDefaults(pod, c.raw)
		if errs := validatePod(pod); len(errs) > 0 {
			return p.errList(errs, nil)
		}
		p.bundle.Pod = pod
		return nil
	}
	var obj any
	switch c.ref.Kind {
	case workload.KindDeployment:
		obj = &appsv1.Deployment{}
	case workload.KindReplicaSet:
		obj = &appsv1.ReplicaSet{}
	case workload.KindStatefulSet:
		obj = &appsv1.StatefulSet{}
	case workload.KindDaemonSet:
		obj = &appsv1.DaemonSet{}
	case workload.KindReplicationController:
		obj = &corev1.ReplicationController{}
	case workload.KindJob:
		obj = &batchv1.Job{}
	case workload.KindCronJob:
		obj = &batchv1.CronJob{}
	}
	if err := p.decode(c.js, obj); err != nil {
		return err
	}
	if old != "" {
		// The API server no longer serves this version: podstep reads the
		// object as the current version, with the old version's selector
		// default (the template's labels), and says so.
		p.bundle.Notes = append(p.bundle.Notes, fmt.Sprintf("%s: apiVersion %s %s; an API server of v1.37 refuses it (kubectl: no matches for kind %q in version %q): podstep reads it as %s, expected apiVersion: %s", c.ref, c.apiString, old, c.ref.Kind, c.apiString, want, want))
		workload.DefaultOldSelector(obj, c.apiString)
	}
	return p.generate(c, obj)
}

// generate defaults the workload's pod template as the API server defaults
// pods (SetDefaults_PodSpec and the rest apply to templates too), makes the
// controller's pod (internal/workload) and validates it as a Pod, with the
// template's field paths.
func (p *parser) generate(c candidate, obj any) error {
	tpath := workload.TemplatePath(c.ref.Kind)
	if name := metaName(obj); name == "" {
		return p.errf("metadata.name", "required value; expected the %s's name", c.ref.Kind)
	}
	setWorkloadNamespace(obj)
	t := workload.Template(obj)
	if t == nil {
		return p.errf(tpath, "required value; expected the pod template")
	}
	tmp := &corev1.Pod{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: t.Spec}
	setPodDefaults(tmp, c.raw)
	t.Spec = tmp.Spec
	g, err := workload.Generate(obj, workload.Options{Now: p.opts.Now})
	if err != nil {
		if fe, ok := err.(*workload.FieldError); ok {
			return p.errf(fe.Field, "%s", fe.Msg)
		}
		return p.errf("", "%v", err)
	}
	pod := g.Pod
	// The API server defaults the pod the controller creates, as any pod
	// (the fieldRef apiVersion of JOB_COMPLETION_INDEX among others).
	pod.UID = PodUID(append(append([]byte{}, c.raw...), pod.Name...))
	setPodDefaults(pod, c.raw)
	if errs := validatePod(pod); len(errs) > 0 {
		return p.errList(errs, func(field string) string {
			if strings.HasPrefix(field, "spec.") || strings.HasPrefix(field, "metadata.") {
				return tpath + "." + field
			}
			return field
		})
	}
	p.bundle.Pod = pod
	p.bundle.Workload = g
	for _, n := range g.Notes {
		p.bundle.Notes = append(p.bundle.Notes, fmt.Sprintf("%s: %s", g.From, n))
	}
	return nil
}

func metaName(obj any) string {
	if t, ok := obj.(interface{ GetName() string }); ok {
		return t.GetName()
	}
	return ""
}

func setWorkloadNamespace(obj any) {
	if t, ok := obj.(interface {
		GetNamespace() string
		SetNamespace(string)
	}); ok && t.GetNamespace() == "" {
		t.SetNamespace(DefaultNamespace)
	}
}
