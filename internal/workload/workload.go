// Package workload turns a workload object (Deployment, ReplicaSet,
// ReplicationController, StatefulSet, DaemonSet, Job, CronJob) into the pod
// its controller would create first, as kubernetes v1.37's controllers and
// API server strategies build it: the generated name, the labels,
// annotations, env, affinity, tolerations, finalizers and ownerReferences
// each adds. Every rule applied is said in a Note naming the upstream
// function and file, so the steps can say which controller made what.
//
// Values the API server would assign at random are made deterministic so
// that plans are reproducible: the 5-character generateName suffix is drawn
// from the API server's alphabet with a generator seeded from the prefix,
// and a workload's UID (when metadata.uid is unset) is derived from its
// kind, namespace and name. Neither is what a cluster would pick.
package workload

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Workload kinds, as their `kind:` field spells them.
const (
	KindPod                   = "Pod"
	KindDeployment            = "Deployment"
	KindReplicaSet            = "ReplicaSet"
	KindReplicationController = "ReplicationController"
	KindStatefulSet           = "StatefulSet"
	KindDaemonSet             = "DaemonSet"
	KindJob                   = "Job"
	KindCronJob               = "CronJob"
)

// apiVersions is the apiVersion each workload kind is served at in v1.37
// (the older extensions/v1beta1, apps/v1beta1/2 and batch/v1beta1 are gone).
var apiVersions = map[string]string{
	KindPod:                   "v1",
	KindDeployment:            "apps/v1",
	KindReplicaSet:            "apps/v1",
	KindReplicationController: "v1",
	KindStatefulSet:           "apps/v1",
	KindDaemonSet:             "apps/v1",
	KindJob:                   "batch/v1",
	KindCronJob:               "batch/v1",
}

// IsWorkload reports whether kind is one of the controller kinds this
// package turns into a pod (Pod itself is not one).
func IsWorkload(kind string) bool {
	_, ok := apiVersions[kind]
	return ok && kind != KindPod
}

// APIVersion returns the apiVersion kind is served at ("" if unknown).
func APIVersion(kind string) string { return apiVersions[kind] }

// aliases maps kubectl's resource names, plural and short names, with and
// without their API group, to the kind (kubectl get's resource forms).
var aliases = func() map[string]string {
	m := map[string]string{}
	add := func(kind, group string, names ...string) {
		for _, n := range names {
			m[n] = kind
			if group != "" {
				m[n+"."+group] = kind
			}
		}
	}
	add(KindPod, "", "po", "pod", "pods")
	add(KindDeployment, "apps", "deploy", "deployment", "deployments")
	add(KindReplicaSet, "apps", "rs", "replicaset", "replicasets")
	add(KindReplicationController, "", "rc", "replicationcontroller", "replicationcontrollers")
	add(KindStatefulSet, "apps", "sts", "statefulset", "statefulsets")
	add(KindDaemonSet, "apps", "ds", "daemonset", "daemonsets")
	add(KindJob, "batch", "job", "jobs")
	add(KindCronJob, "batch", "cj", "cronjob", "cronjobs")
	return m
}()

// KindOf returns the kind a kubectl resource name stands for (deploy,
// deployments.apps, sts, po, ...; case-insensitive), and whether it is one.
func KindOf(resource string) (string, bool) {
	k, ok := aliases[strings.ToLower(resource)]
	return k, ok
}

// Ref names one pod or workload of a file: KIND/NAME.
type Ref struct {
	Kind, Name string
}

// String is "Kind/name", the form a file's listing shows.
func (r Ref) String() string { return r.Kind + "/" + r.Name }

// ParseRef parses KIND/NAME in any of kubectl's forms (deploy/x,
// deployment/x, deployments/x, deployment.apps/x, sts/x, ds/x, rs/x, rc/x,
// job/x, cj/x, po/x, pod/x; case-insensitive kind).
func ParseRef(s string) (Ref, error) {
	k, name, ok := strings.Cut(s, "/")
	if !ok || k == "" || name == "" || strings.Contains(name, "/") {
		return Ref{}, fmt.Errorf("invalid value %q; expected KIND/NAME, such as deploy/web, sts/db, job/migrate or pod/web-0", s)
	}
	kind, ok := aliases[strings.ToLower(k)]
	if !ok {
		return Ref{}, fmt.Errorf("invalid value %q: unknown kind %q; expected one of po, deploy, rs, rc, sts, ds, job, cj (or their full names, as kubectl takes them)", s, k)
	}
	return Ref{Kind: kind, Name: name}, nil
}

// Note is one rule applied to the pod: what it did and the upstream
// function and file that does it.
type Note struct {
	// Rule is the upstream function, e.g. "GetPodFromTemplate".
	Rule string `json:"rule"`
	// File is the upstream file, e.g. "pkg/controller/controller_utils.go".
	File string `json:"file"`
	// Did says what the rule set on the pod.
	Did string `json:"did"`
}

// String is "Did (Rule, File)".
func (n Note) String() string { return fmt.Sprintf("%s (%s, %s)", n.Did, n.Rule, n.File) }

// Generated is the pod a workload's controller would create.
type Generated struct {
	// Pod is the pod, before the API server's pod defaults (the caller
	// applies them, as it does to a Pod of the file).
	Pod *corev1.Pod
	// From is the workload the pod was made from.
	From Ref
	// Notes are the rules applied, in order.
	Notes []Note
	// TemplatePath is the field path of the pod template in the workload,
	// such as "spec.template" or "spec.jobTemplate.spec.template": a pod
	// field path "spec.X" is the workload's TemplatePath + ".spec.X".
	TemplatePath string
}

// Summary is one line for the pod's story: the workload, the pod, and the
// rules applied (function, file), in order.
func (g *Generated) Summary() string {
	var rules []string
	for _, n := range g.Notes {
		rules = append(rules, n.Rule+" ("+n.File+")")
	}
	return fmt.Sprintf("%s → pod %s, made as its controller makes it: %s", g.From, g.Pod.Name, strings.Join(rules, ", "))
}

// Options are the inputs a controller would take from the cluster.
type Options struct {
	// Now is the time a CronJob's first job is scheduled after (the
	// CronJob is taken as created at Now); zero: time.Now().
	Now time.Time
}

// FieldError is a workload the API server would refuse: the field path in
// the workload and what is wrong and expected.
type FieldError struct {
	Field, Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Generate returns the pod obj's controller would create first. obj is a
// *appsv1.Deployment, *appsv1.ReplicaSet, *corev1.ReplicationController,
// *appsv1.StatefulSet, *appsv1.DaemonSet, *batchv1.Job or *batchv1.CronJob,
// decoded from a file with its pod template defaulted as the API server
// defaults pods. Its metadata.namespace must be set. A workload the API
// server would refuse is a *FieldError.
func Generate(obj any, o Options) (*Generated, error) {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return deployment(w)
	case *appsv1.ReplicaSet:
		return replicaSet(w)
	case *corev1.ReplicationController:
		return replicationController(w)
	case *appsv1.StatefulSet:
		return statefulSet(w)
	case *appsv1.DaemonSet:
		return daemonSet(w)
	case *batchv1.Job:
		return job(w)
	case *batchv1.CronJob:
		return cronJob(w, o)
	default:
		return nil, fmt.Errorf("workload: unsupported object %T", obj)
	}
}

// Template returns the pod template of a workload object (nil for other
// objects), for the caller to default before Generate.
func Template(obj any) *corev1.PodTemplateSpec {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *appsv1.ReplicaSet:
		return &w.Spec.Template
	case *corev1.ReplicationController:
		return w.Spec.Template
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	case *appsv1.DaemonSet:
		return &w.Spec.Template
	case *batchv1.Job:
		return &w.Spec.Template
	case *batchv1.CronJob:
		return &w.Spec.JobTemplate.Spec.Template
	}
	return nil
}

// TemplatePath returns the field path of kind's pod template.
func TemplatePath(kind string) string {
	if kind == KindCronJob {
		return "spec.jobTemplate.spec.template"
	}
	return "spec.template"
}

// removed lists the workload apiVersions v1.37 no longer serves, with the
// release that removed them, that podstep still reads as the current one.
var removed = map[string]map[string]string{
	"extensions/v1beta1": {KindDeployment: "v1.16", KindDaemonSet: "v1.16", KindReplicaSet: "v1.16"},
	"apps/v1beta1":       {KindDeployment: "v1.16", KindStatefulSet: "v1.16"},
	"apps/v1beta2":       {KindDeployment: "v1.16", KindStatefulSet: "v1.16", KindDaemonSet: "v1.16", KindReplicaSet: "v1.16"},
	"batch/v1beta1":      {KindCronJob: "v1.25"},
}

// Removed reports whether apiVersion is a version of kind that an older
// API server served, and says when it was removed ("is no longer served
// (removed in v1.16)").
func Removed(kind, apiVersion string) (string, bool) {
	v, ok := removed[apiVersion][kind]
	if !ok {
		return "", false
	}
	return "is no longer served (removed in " + v + ")", true
}

// DefaultOldSelector gives a workload read from a removed apiVersion
// without spec.selector the selector those versions defaulted: the
// template's labels (SetDefaults_DaemonSet, SetDefaults_Deployment,
// SetDefaults_ReplicaSet of extensions/v1beta1, SetDefaults_Deployment and
// SetDefaults_StatefulSet of apps/v1beta1; apps/v1beta2 required one).
func DefaultOldSelector(obj any, apiVersion string) {
	if apiVersion != "extensions/v1beta1" && apiVersion != "apps/v1beta1" {
		return
	}
	var sel **metav1.LabelSelector
	switch w := obj.(type) {
	case *appsv1.Deployment:
		sel = &w.Spec.Selector
	case *appsv1.DaemonSet:
		sel = &w.Spec.Selector
	case *appsv1.ReplicaSet:
		sel = &w.Spec.Selector
	case *appsv1.StatefulSet:
		sel = &w.Spec.Selector
	default:
		return
	}
	if *sel == nil {
		if t := Template(obj); t != nil && len(t.Labels) > 0 {
			*sel = &metav1.LabelSelector{MatchLabels: copyMap(t.Labels)}
		}
	}
}
