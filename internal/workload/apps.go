package workload

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	controllerUtils = "pkg/controller/controller_utils.go"
	stsUtils        = "pkg/controller/statefulset/stateful_set_utils.go"
	dsUtil          = "pkg/controller/daemon/util/daemonset_util.go"
)

// fromTemplate is GetPodFromTemplate (pkg/controller/controller_utils.go):
// the template's labels, annotations, finalizers and spec, generateName
// from getPodsPrefix, and the controller's ownerReference. The name is the
// API server's generateName (names.SimpleNameGenerator).
func fromTemplate(g *Generated, t *corev1.PodTemplateSpec, owner *metav1.ObjectMeta, ref metav1.OwnerReference, prefix string) *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       owner.Namespace,
			Labels:          copyMap(t.Labels),
			Annotations:     copyMap(t.Annotations),
			Finalizers:      append([]string{}, t.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if prefix == "" {
		prefix = podsPrefix(owner.Name)
	}
	pod.GenerateName = prefix
	pod.Name = generateName(prefix)
	g.note("GetPodFromTemplate", controllerUtils, fmt.Sprintf("pod from the template of %s %s: its labels, annotations, finalizers and spec; ownerReference %s/%s (controller); generateName %q", ref.Kind, owner.Name, ref.Kind, owner.Name, prefix))
	g.note("simpleNameGenerator.GenerateName", "staging/src/k8s.io/apiserver/pkg/storage/names/generate.go", fmt.Sprintf("name %s: generateName plus 5 characters (podstep's are seeded from the prefix, the API server's are random)", pod.Name))
	return pod
}

func (g *Generated) note(rule, file, did string) {
	g.Notes = append(g.Notes, Note{Rule: rule, File: file, Did: did})
}

var (
	replicaSetGVK = appsv1.SchemeGroupVersion.WithKind(KindReplicaSet)
	stsGVK        = appsv1.SchemeGroupVersion.WithKind(KindStatefulSet)
	dsGVK         = appsv1.SchemeGroupVersion.WithKind(KindDaemonSet)
	rcGVK         = corev1.SchemeGroupVersion.WithKind(KindReplicationController)
)

// deployment: the deployment controller's new ReplicaSet (getNewReplicaSet,
// pkg/controller/deployment/sync.go: name NAME-HASH, the template with
// pod-template-hash), then that ReplicaSet's pod.
func deployment(d *appsv1.Deployment) (*Generated, error) {
	g := &Generated{From: Ref{KindDeployment, d.Name}, TemplatePath: "spec.template"}
	if e := checkSelected(d.Spec.Selector, &d.Spec.Template, "spec", "deployment"); e != nil {
		return nil, e
	}
	if e := checkReplicaSetTemplate(&d.Spec.Template, "spec.template", "ReplicaSet"); e != nil {
		return nil, e
	}
	if e := checkReplicas(d.Spec.Replicas); e != nil {
		return nil, e
	}
	d.UID = uidFor(&d.ObjectMeta, KindDeployment)
	hash := computeHash(&d.Spec.Template, d.Status.CollisionCount)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: replicaSetName(d.Name, hash), Namespace: d.Namespace}}
	rs.UID = uidFor(&rs.ObjectMeta, KindReplicaSet)
	rs.Spec.Template = *d.Spec.Template.DeepCopy()
	rs.Spec.Template.Labels = copyMap(d.Spec.Template.Labels)
	rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	g.note("getNewReplicaSet", "pkg/controller/deployment/sync.go", fmt.Sprintf("ReplicaSet %s (ownerReference Deployment/%s): pod-template-hash %s, ComputeHash of the template (FNV-32a of its spew dump; equal to the controller's only if the API server stored the same defaulted template)", rs.Name, d.Name, hash))
	g.Pod = fromTemplate(g, &rs.Spec.Template, &rs.ObjectMeta, controllerRef(&rs.ObjectMeta, replicaSetGVK), "")
	return g, nil
}

// replicaSetName is generateReplicaSetName (pkg/controller/deployment/sync.go).
func replicaSetName(deploymentName, hash string) string {
	max := 253 - 1 - len(hash)
	if len(deploymentName) > max && max > 0 {
		deploymentName = deploymentName[:max]
	}
	return deploymentName + "-" + hash
}

// replicaSet: manageReplicas (pkg/controller/replicaset/replica_set.go)
// creates pods with CreatePods: GetPodFromTemplate.
func replicaSet(rs *appsv1.ReplicaSet) (*Generated, error) {
	g := &Generated{From: Ref{KindReplicaSet, rs.Name}, TemplatePath: "spec.template"}
	if e := checkSelected(rs.Spec.Selector, &rs.Spec.Template, "spec", "deployment"); e != nil {
		return nil, e
	}
	if e := checkReplicaSetTemplate(&rs.Spec.Template, "spec.template", "ReplicaSet"); e != nil {
		return nil, e
	}
	if e := checkReplicas(rs.Spec.Replicas); e != nil {
		return nil, e
	}
	rs.UID = uidFor(&rs.ObjectMeta, KindReplicaSet)
	g.Pod = fromTemplate(g, &rs.Spec.Template, &rs.ObjectMeta, controllerRef(&rs.ObjectMeta, replicaSetGVK), "")
	return g, nil
}

// replicationController: the same ReplicaSet controller code
// (pkg/controller/replication), with the v1 defaults: the selector, and the
// RC's labels, from the template's labels (SetDefaults_ReplicationController,
// pkg/apis/core/v1/defaults.go).
func replicationController(rc *corev1.ReplicationController) (*Generated, error) {
	g := &Generated{From: Ref{KindReplicationController, rc.Name}, TemplatePath: "spec.template"}
	t := rc.Spec.Template
	if t == nil {
		return nil, fieldErr("spec.template", "required value; expected the pod template")
	}
	if len(rc.Spec.Selector) == 0 {
		rc.Spec.Selector = copyMap(t.Labels)
		if len(t.Labels) > 0 {
			g.note("SetDefaults_ReplicationController", "pkg/apis/core/v1/defaults.go", "spec.selector defaulted to the template's labels")
		}
	}
	if len(rc.Spec.Selector) == 0 {
		return nil, fieldErr("spec.selector", "required value; expected a non-empty selector (or template labels to default it from)")
	}
	for k, v := range rc.Spec.Selector {
		if t.Labels[k] != v {
			return nil, fieldErr("spec.template.metadata.labels", "invalid value: `selector` does not match template `labels`; expected the template's labels to include %s=%s", k, v)
		}
	}
	if e := checkReplicaSetTemplate(t, "spec.template", "ReplicationController"); e != nil {
		return nil, e
	}
	if rc.Spec.Replicas == nil {
		one := int32(1)
		rc.Spec.Replicas = &one
	}
	if e := checkReplicas(rc.Spec.Replicas); e != nil {
		return nil, e
	}
	rc.UID = uidFor(&rc.ObjectMeta, KindReplicationController)
	g.Pod = fromTemplate(g, t, &rc.ObjectMeta, controllerRef(&rc.ObjectMeta, rcGVK), "")
	return g, nil
}

// statefulSet: newVersionedStatefulSetPod for the first ordinal
// (spec.ordinals.start): newStatefulSetPod (GetPodFromTemplate, name
// NAME-ORDINAL, initIdentity/updateIdentity, updateStorage) and
// setPodRevision.
func statefulSet(s *appsv1.StatefulSet) (*Generated, error) {
	g := &Generated{From: Ref{KindStatefulSet, s.Name}, TemplatePath: "spec.template"}
	if e := checkSelected(s.Spec.Selector, &s.Spec.Template, "spec", "statefulset"); e != nil {
		return nil, e
	}
	if rp := s.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyAlways && rp != "" {
		return nil, fieldErr("spec.template.spec.restartPolicy", "unsupported value %q; expected \"Always\"", rp)
	}
	if s.Spec.Template.Spec.ActiveDeadlineSeconds != nil {
		return nil, fieldErr("spec.template.spec.activeDeadlineSeconds", "forbidden: activeDeadlineSeconds in StatefulSet is not Supported; expected no activeDeadlineSeconds")
	}
	if e := checkReplicas(s.Spec.Replicas); e != nil {
		return nil, e
	}
	ordinal := 0
	if s.Spec.Ordinals != nil {
		if s.Spec.Ordinals.Start < 0 {
			return nil, fieldErr("spec.ordinals.start", "invalid value %d: must be greater than or equal to 0", s.Spec.Ordinals.Start)
		}
		ordinal = int(s.Spec.Ordinals.Start)
	}
	seen := map[string]bool{}
	for i, c := range s.Spec.VolumeClaimTemplates {
		if c.Name == "" {
			return nil, fieldErr(fmt.Sprintf("spec.volumeClaimTemplates[%d].metadata.name", i), "required value; expected the claim template's name, which volumeMounts name")
		}
		if seen[c.Name] {
			return nil, fieldErr(fmt.Sprintf("spec.volumeClaimTemplates[%d].metadata.name", i), "duplicate value %q; expected each claim template once", c.Name)
		}
		seen[c.Name] = true
	}
	s.UID = uidFor(&s.ObjectMeta, KindStatefulSet)
	var collision int32
	if s.Status.CollisionCount != nil {
		collision = *s.Status.CollisionCount
	}
	hash, err := revisionHash(s, collision)
	if err != nil {
		return nil, err
	}
	revision := controllerRevisionName(s.Name, hash)

	pod := fromTemplate(g, &s.Spec.Template, &s.ObjectMeta, controllerRef(&s.ObjectMeta, stsGVK), "")
	g.Pod = pod
	pod.GenerateName = ""
	pod.Name = fmt.Sprintf("%s-%d", s.Name, ordinal)
	g.Notes = g.Notes[:len(g.Notes)-1] // no generateName: getPodName
	g.note("getPodName", stsUtils, fmt.Sprintf("name %s: NAME-ORDINAL, the first ordinal spec.ordinals.start (%d)", pod.Name, ordinal))
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
	g.note("updateIdentity", stsUtils, fmt.Sprintf("labels %s=%s and %s=%d", appsv1.StatefulSetPodNameLabel, pod.Name, appsv1.PodIndexLabel, ordinal))
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = s.Spec.ServiceName
	g.note("initIdentity", stsUtils, fmt.Sprintf("spec.hostname %s, spec.subdomain %q (spec.serviceName)", pod.Name, s.Spec.ServiceName))
	if len(s.Spec.VolumeClaimTemplates) > 0 {
		// updateStorage: one volume per claim template (named as the
		// template) first, then the pod's other volumes; upstream ranges
		// over a map, podstep keeps the templates' order.
		var vols []corev1.Volume
		var claims []string
		for _, c := range s.Spec.VolumeClaimTemplates {
			claim := fmt.Sprintf("%s-%s-%d", c.Name, s.Name, ordinal)
			vols = append(vols, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
			claims = append(claims, c.Name+" → claim "+claim)
		}
		for _, v := range pod.Spec.Volumes {
			if !seen[v.Name] {
				vols = append(vols, v)
			}
		}
		pod.Spec.Volumes = vols
		g.note("updateStorage", stsUtils, fmt.Sprintf("volumes from volumeClaimTemplates (TEMPLATE-NAME-ORDINAL): %s", joinComma(claims)))
	}
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	g.note("setPodRevision", stsUtils, fmt.Sprintf("label %s=%s: the ControllerRevision's name, NAME-HASH of the template patch (newRevision, HashControllerRevision in pkg/controller/history/controller_history.go)", appsv1.ControllerRevisionHashLabelKey, revision))
	return g, nil
}

// controllerRevisionName is ControllerRevisionName
// (pkg/controller/history/controller_history.go).
func controllerRevisionName(prefix, hash string) string {
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return prefix + "-" + hash
}

// daemonSet: syncNodes (pkg/controller/daemon/daemon_controller.go):
// CreatePodTemplate (the generation and hash labels, the daemon
// tolerations), ReplaceDaemonSetPodNodeNameNodeAffinity for the node, then
// CreatePods (GetPodFromTemplate). The node is not known here: the pod is
// made for node NODE, and the caller's node replaces it (SetNode).
func daemonSet(ds *appsv1.DaemonSet) (*Generated, error) {
	g := &Generated{From: Ref{KindDaemonSet, ds.Name}, TemplatePath: "spec.template"}
	if e := checkSelected(ds.Spec.Selector, &ds.Spec.Template, "spec", "daemonset"); e != nil {
		return nil, e
	}
	if rp := ds.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyAlways && rp != "" {
		return nil, fieldErr("spec.template.spec.restartPolicy", "unsupported value %q; expected \"Always\"", rp)
	}
	if ds.Spec.Template.Spec.ActiveDeadlineSeconds != nil {
		return nil, fieldErr("spec.template.spec.activeDeadlineSeconds", "forbidden: activeDeadlineSeconds in DaemonSet is not Supported; expected no activeDeadlineSeconds")
	}
	ds.UID = uidFor(&ds.ObjectMeta, KindDaemonSet)
	hash := computeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	t := ds.Spec.Template.DeepCopy()
	added := addDaemonTolerations(&t.Spec)
	g.note("AddOrUpdateDaemonPodTolerations", dsUtil, "tolerations (Exists): "+joinComma(added))
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	// The API server creates a DaemonSet with templateGeneration 1
	// (PrepareForCreate, pkg/registry/apps/daemonset/strategy.go), shown in
	// apps/v1 as the deprecated.daemonset.template.generation annotation
	// (pkg/apis/apps/v1/conversion.go) that GetTemplateGeneration reads.
	gen := "1"
	if v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; ok {
		gen = v
	}
	t.Labels[templateGenerationLabel] = gen
	t.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	g.note("CreatePodTemplate", dsUtil, fmt.Sprintf("labels pod-template-generation=%s (templateGeneration 1 on create: PrepareForCreate, pkg/registry/apps/daemonset/strategy.go) and %s=%s (ComputeHash of the template, as in snapshot, pkg/controller/daemon/update.go)", gen, appsv1.DefaultDaemonSetUniqueLabelKey, hash))
	t.Spec.Affinity = replaceNodeNameAffinity(t.Spec.Affinity, NodePlaceholder)
	g.note("ReplaceDaemonSetPodNodeNameNodeAffinity", dsUtil, "required node affinity replaced by matchFields metadata.name In [the node]: the pod is bound to this node")
	g.Pod = fromTemplate(g, t, &ds.ObjectMeta, controllerRef(&ds.ObjectMeta, dsGVK), "")
	return g, nil
}

// templateGenerationLabel is the DaemonSet pod label with the template
// generation (DaemonSetTemplateGenerationKey, pkg/apis/apps/types.go).
const templateGenerationLabel = "pod-template-generation"

// NodePlaceholder is the node name a DaemonSet's pod is made for until
// SetNode names the node it is admitted to.
const NodePlaceholder = "NODE"

// SetNode puts node in the matchFields metadata.name requirement a
// DaemonSet's pod got from ReplaceDaemonSetPodNodeNameNodeAffinity.
func SetNode(pod *corev1.Pod, node string) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return
	}
	for i := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		t := &a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		for j := range t.MatchFields {
			if t.MatchFields[j].Key == metav1.ObjectNameField && len(t.MatchFields[j].Values) == 1 && t.MatchFields[j].Values[0] == NodePlaceholder {
				t.MatchFields[j].Values = []string{node}
			}
		}
	}
}

// UnbindNode removes the placeholder node requirement a DaemonSet's pod got
// (podstep fleet: each runner's node is the node); a term left empty goes.
func UnbindNode(pod *corev1.Pod) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return
	}
	var terms []corev1.NodeSelectorTerm
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var keep []corev1.NodeSelectorRequirement
		for _, r := range t.MatchFields {
			if r.Key != metav1.ObjectNameField || len(r.Values) != 1 || r.Values[0] != NodePlaceholder {
				keep = append(keep, r)
			}
		}
		t.MatchFields = keep
		if len(t.MatchFields) > 0 || len(t.MatchExpressions) > 0 {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
		return
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
}

// addDaemonTolerations is AddOrUpdateDaemonPodTolerations: the six
// Exists tolerations, and network-unavailable for hostNetwork pods; it
// returns their "key:effect".
func addDaemonTolerations(spec *corev1.PodSpec) []string {
	tol := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if spec.HostNetwork {
		tol = append(tol, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	var said []string
	for _, t := range tol {
		addOrUpdateToleration(spec, t)
		said = append(said, t.Key+":"+string(t.Effect))
	}
	return said
}

// addOrUpdateToleration is AddOrUpdateTolerationInPodSpec
// (pkg/apis/core/v1/helper/helpers.go): a toleration matching the new one's
// key, operator, value and effect is replaced, else the new one is appended.
func addOrUpdateToleration(spec *corev1.PodSpec, t corev1.Toleration) {
	for i := range spec.Tolerations {
		if spec.Tolerations[i].MatchToleration(&t) {
			spec.Tolerations[i] = t
			return
		}
	}
	spec.Tolerations = append(spec.Tolerations, t)
}

// replaceNodeNameAffinity is ReplaceDaemonSetPodNodeNameNodeAffinity.
func replaceNodeNameAffinity(a *corev1.Affinity, node string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}
	switch {
	case a == nil:
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
	case a.NodeAffinity == nil:
		a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}
	case a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil:
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	default:
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = sel.NodeSelectorTerms
	}
	return a
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
