package manifest

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstep/podstep/internal/workload"
)

// Supported object kinds. Every document must have apiVersion v1 and one of
// these kinds.
const (
	KindPod       = "Pod"
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
	KindNode      = "Node"
)

// StdinName is the file name shown for a manifest read from standard input
// (path "-").
const StdinName = "<stdin>"

// Bundle is one manifest file, decoded, defaulted and validated.
type Bundle struct {
	// File is the path as given to Load; "-" (stdin) is shown as "<stdin>".
	File string
	// Pod is the one Pod of the file, with API server defaults applied and
	// a UID set (see PodUID).
	Pod *corev1.Pod
	// Secrets holds the Secrets of the file, keyed "namespace/name".
	Secrets map[string]*corev1.Secret
	// ConfigMaps holds the ConfigMaps of the file, keyed "namespace/name".
	ConfigMaps map[string]*corev1.ConfigMap
	// Claims holds the PersistentVolumeClaims of the file (and those
	// internal/cluster read for run --pod), keyed "namespace/name"; nil
	// when there are none.
	Claims map[string]*corev1.PersistentVolumeClaim
	// Volumes holds the PersistentVolumes of the file (and those
	// internal/cluster read), keyed by name (they are cluster-scoped); nil
	// when there are none.
	Volumes map[string]*corev1.PersistentVolume
	// CSIDrivers holds the CSIDrivers (storage.k8s.io/v1) of the file (and
	// those internal/cluster read), keyed by name; nil when there are none.
	CSIDrivers map[string]*storagev1.CSIDriver
	// VolumeAttachments holds the VolumeAttachments of the file, keyed by
	// name (csi-sha256(handle+driver+node)); nil when there are none.
	VolumeAttachments map[string]*storagev1.VolumeAttachment
	// Node is the Node of the file; nil when the file has none.
	Node *corev1.Node
	// Services are the Services whose env vars the kubelet adds to every
	// container (getServiceEnvVarMap: the pod's namespace's, with
	// enableServiceLinks, and default/kubernetes), as internal/cluster read
	// them for run --pod; nil without an API server, as for a kubelet
	// without one (no service lister: no such variables).
	Services []*corev1.Service
	// Digest is the hex sha256 of the raw file bytes.
	Digest string
	// Origins says where objects that did not come from the file came
	// from, keyed by OriginKey ("Secret ns/name"), such as "API server
	// https://10.0.0.1:6443, resourceVersion 4711" (internal/cluster
	// fills it). An object without an entry came from the file.
	Origins map[string]string
	// Workload is the workload the Pod was made from, with the rules its
	// controller applied; nil when the file's Pod is a Pod.
	Workload *workload.Generated
	// Notes say what podstep did with the file beyond decoding its Pod:
	// the controller rules that made the Pod (KIND/NAME: what (function,
	// file)) and the documents skipped.
	Notes []string
}

// OriginKey is the key of Bundle.Origins for an object.
func OriginKey(kind, namespace, name string) string {
	return kind + " " + namespace + "/" + name
}

// Origin says where an object that did not come from the file came from
// (its Origins entry); "" for the file's own objects and unknown ones.
func (b *Bundle) Origin(kind, namespace, name string) string {
	return b.Origins[OriginKey(kind, namespace, name)]
}

// Secret returns the Secret namespace/name of the bundle, if the file has it.
func (b *Bundle) Secret(namespace, name string) (*corev1.Secret, bool) {
	s, ok := b.Secrets[namespace+"/"+name]
	return s, ok
}

// ConfigMap returns the ConfigMap namespace/name of the bundle, if the file
// has it.
func (b *Bundle) ConfigMap(namespace, name string) (*corev1.ConfigMap, bool) {
	c, ok := b.ConfigMaps[namespace+"/"+name]
	return c, ok
}

// ServiceList returns the bundle's Services (podcfg.EnvSource).
func (b *Bundle) ServiceList() []*corev1.Service {
	return b.Services
}

// Error is a bad-input error: one clear message naming file, document, field
// path, what is wrong and what is expected.
type Error struct {
	// File is the file name as given ("<stdin>" for standard input).
	File string
	// Doc is the 1-based number of the document (empty documents are not
	// counted); 0 means the error concerns the whole file.
	Doc int
	// Kind and Name identify the object of the document, when known.
	Kind, Name string
	// Field is the field path within the object, such as
	// "spec.containers[0].image"; empty when the error is not about a field.
	Field string
	// Msg says what is wrong and what is expected.
	Msg string
	// Also are the object's other field errors, after Field's in the
	// order of their paths: as the API server, podstep reports every field
	// error of an object at once (its field.ErrorList aggregate), so that
	// one run shows all there is to fix.
	Also []FieldError
}

// FieldError is one field error of an object besides the first (Error.Also).
type FieldError struct {
	Field, Msg string
}

// maxShown is the most field errors an Error prints; the rest are counted.
const maxShown = 20

// Error formats the error as
//
//	FILE: document N (KIND "NAME"): FIELD: MSG
//
// leaving out the parts that are unknown or do not apply.
func (e *Error) Error() string {
	var sb strings.Builder
	if e.File != "" {
		sb.WriteString(e.File)
		sb.WriteString(": ")
	}
	if e.Doc > 0 {
		fmt.Fprintf(&sb, "document %d", e.Doc)
		switch {
		case e.Kind != "" && e.Name != "":
			fmt.Fprintf(&sb, " (%s %q)", e.Kind, shortText(e.Name))
		case e.Kind != "":
			fmt.Fprintf(&sb, " (%s)", e.Kind)
		}
		sb.WriteString(": ")
	}
	if len(e.Also) > 0 {
		fmt.Fprintf(&sb, "%d field errors:", 1+len(e.Also))
		all := append([]FieldError{{Field: e.Field, Msg: e.Msg}}, e.Also...)
		for i, f := range all {
			if i == maxShown {
				fmt.Fprintf(&sb, "\n  … and %d more", len(all)-maxShown)
				break
			}
			sb.WriteString("\n  ")
			writeField(&sb, f.Field, f.Msg)
		}
		return sb.String()
	}
	writeField(&sb, e.Field, e.Msg)
	return sb.String()
}

// writeField writes "FIELD: MSG" (MSG alone without a field).
func writeField(sb *strings.Builder, field, msg string) {
	if field != "" {
		sb.WriteString(shortText(field))
		sb.WriteString(": ")
	}
	sb.WriteString(msg)
}

// Parse decodes, defaults and validates the manifest data; file is the name
// used in the Bundle and in error messages ("-" is shown as "<stdin>").
//
// Defaults applied, as the API server would (pkg/apis/core/v1/defaults.go):
//
//   - metadata.namespace "default" on every object that has none (as kubectl
//     would with no -n; Secrets and ConfigMaps do not inherit the Pod's);
//   - Pod: restartPolicy Always, dnsPolicy ClusterFirst, schedulerName
//     default-scheduler, terminationGracePeriodSeconds 30, an empty
//     securityContext, enableServiceLinks true; with hostNetwork, hostPort
//     defaults to containerPort;
//   - every container (init containers too): imagePullPolicy Always when the
//     image tag is "latest" or the image has neither tag nor digest, else
//     IfNotPresent; terminationMessagePath /dev/termination-log;
//     terminationMessagePolicy File; port protocol TCP; requests defaulted
//     from limits for resources with a limit and no request; probe timeouts,
//     periods and thresholds (1s, 10s, 1, 3); httpGet path "/" and scheme
//     HTTP; fieldRef apiVersion v1;
//   - volumes: emptyDir when no source is set; configMap, secret,
//     downwardAPI and projected defaultMode 0644; hostPath type "";
//     serviceAccountToken expirationSeconds 3600;
//   - Secret: type Opaque, stringData merged into data (stringData wins) and
//     then cleared;
//   - Node: status.allocatable copied from status.capacity when unset;
//   - PersistentVolumeClaim: status.phase Pending, spec.volumeMode
//     Filesystem; PersistentVolume: status.phase Pending, reclaim policy
//     Retain, volumeMode Filesystem, hostPath type "" (claims.go);
//   - Pod metadata.uid: see PodUID.
//
// Any problem is returned as an *Error.
func Parse(file string, data []byte) (*Bundle, error) {
	return ParseWith(file, data, Options{})
}

// ParseWith is Parse with options: a file with several Pods and workloads
// needs o.Select. A workload (Deployment, StatefulSet, DaemonSet,
// ReplicaSet, ReplicationController, Job, CronJob) becomes the pod its
// controller would create (internal/workload), its template defaulted and
// validated as a Pod; a v1 List is read item by item; kinds podstep does not
// use are skipped, with a note each (Bundle.Notes).
func ParseWith(file string, data []byte, o Options) (*Bundle, error) {
	if file == "-" {
		file = StdinName
	}
	sum := sha256.Sum256(data)
	b := &Bundle{
		File:       file,
		Secrets:    map[string]*corev1.Secret{},
		ConfigMaps: map[string]*corev1.ConfigMap{},
		Digest:     hex.EncodeToString(sum[:]),
	}
	p := &parser{file: file, bundle: b, opts: o}
	if err := p.parse(data); err != nil {
		return nil, err
	}
	return b, nil
}

// PodUID returns the UID podstep gives a Pod that has no metadata.uid: the
// hex md5 of the raw bytes of its YAML document (32 hex characters, the same
// shape as the UIDs the kubelet gives static pods from its file source,
// which hashes the pod object in pkg/kubelet/config/common.go
// applyDefaults). The same document always gets the same UID, so repeated
// runs and cleanup find the same sandbox; any change to the document gives a
// different UID.
func PodUID(rawDoc []byte) types.UID {
	sum := md5.Sum(rawDoc)
	return types.UID(hex.EncodeToString(sum[:]))
}
