// Package node models the node a pod is admitted to: its allocatable
// resources, labels, taints and conditions (a v1 Node), the pods already
// running on it, and the kubelet settings admission depends on.
//
// [Local] describes this machine as a kubelet registers it; [Load] reads a
// v1 Node YAML. [Admit] runs the kubelet's admission checks against it.
package node

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/limit"
)

// DefaultMaxPods is the kubelet's default --max-pods, the pods capacity of
// a node that sets none.
const DefaultMaxPods = 110

// Node is a node as admission sees it.
type Node struct {
	// Object is the v1 Node: name, labels, taints, allocatable, conditions.
	Object *corev1.Node
	// Existing are the other pods on the node, whose requests count as
	// used and whose host ports are taken (the kubelet's active pods).
	Existing []*corev1.Pod
	// AllowedUnsafeSysctls is the kubelet's --allowed-unsafe-sysctls
	// (names or patterns ending in *).
	AllowedUnsafeSysctls []string
	// Source says where the node came from: "this machine", a file name, or
	// "the manifest".
	Source string
	// Notes are facts about how the node was filled in (defaults applied).
	Notes []string
	// Warnings are what a user should know about the node podstep chose
	// (this machine playing the pod's node): the admit step raises them.
	Warnings []string
	// FeaturesFromRuntime: status.features is the runtime's to fill, as the
	// kubelet's NodeFeatures setter (pkg/kubelet/nodestatus/setters.go)
	// fills it from the CRI RuntimeStatus features (this machine's node);
	// false for a node given as a file or in the manifest, whose
	// status.features stands as written.
	FeaturesFromRuntime bool
}

// Name is the node's name.
func (n *Node) Name() string { return n.Object.Name }

// OS is the node's kubernetes.io/os label, or this machine's OS when the
// label is missing (the kubelet always sets it to its own GOOS).
func (n *Node) OS() string {
	if os := n.Object.Labels[corev1.LabelOSStable]; os != "" {
		return os
	}
	return runtime.GOOS
}

// Local describes this machine as a kubelet with default settings registers
// it: capacity from the CPU count, /proc/meminfo and the root filesystem;
// allocatable is capacity minus the kubelet's default hard eviction
// thresholds (memory.available<100Mi, nodefs.available<10%); 110 pods; the
// kubernetes.io/hostname, os and arch labels. No taints.
func Local() *Node {
	name, _ := os.Hostname()
	name = strings.ToLower(name)
	if name == "" {
		name = "localhost"
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:  *resource.NewMilliQuantity(int64(runtime.NumCPU())*1000, resource.DecimalSI),
		corev1.ResourcePods: *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI),
	}
	alloc := capacity.DeepCopy()
	var notes []string
	if mem := memTotal(); mem > 0 {
		capacity[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
		a := mem - 100*1024*1024
		if a < 0 {
			a = 0
		}
		alloc[corev1.ResourceMemory] = *resource.NewQuantity(a, resource.BinarySI)
		notes = append(notes, "memory allocatable = MemTotal − 100Mi (the kubelet's default eviction-hard memory.available<100Mi)")
	}
	if disk := rootFSSize(); disk > 0 {
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(disk, resource.BinarySI)
		alloc[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(disk-disk/10, resource.BinarySI)
	}
	return &Node{
		Object: &corev1.Node{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   runtime.GOOS,
				corev1.LabelArchStable: runtime.GOARCH,
			}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: alloc},
		},
		Source:              "this machine",
		Notes:               notes,
		FeaturesFromRuntime: true,
	}
}

// MaxSize bounds a --node file: a Node object is at most what the API
// server takes in one request (3 MiB, as a pod manifest).
const MaxSize = 3 << 20

// Load reads a node from a file holding one v1 Node (YAML or JSON), of at
// most MaxSize bytes: a larger file or a device (/dev/zero) is an error
// after reading at most that much (internal/limit).
func Load(path string) (*Node, error) {
	data, err := limit.ReadFile(path, MaxSize, "a v1 Node (YAML or JSON)")
	if err != nil {
		return nil, fmt.Errorf("read node file: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes one v1 Node document. Unknown fields are errors.
func Parse(file string, data []byte) (*Node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file; expected a v1 Node", file)
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("%s: not a YAML object: %v", file, err)
	}
	if tm.Kind != "Node" || tm.APIVersion != "v1" {
		return nil, fmt.Errorf("%s: apiVersion %q, kind %q; expected apiVersion v1, kind Node", file, tm.APIVersion, tm.Kind)
	}
	n := &corev1.Node{}
	if err := yaml.UnmarshalStrict(data, n); err != nil {
		return nil, fmt.Errorf("%s: %s", file, cleanDecodeError(err))
	}
	return FromObject(n, file)
}

// cleanDecodeError drops the decoder's wrapping from err.
func cleanDecodeError(err error) string {
	s := err.Error()
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	return s
}

// FromObject makes a Node from a v1 Node (copied). As the API server and
// the kubelet would: allocatable defaults to capacity, and a node without
// a pods figure accepts the kubelet's default 110 pods. The
// [ExistingPodsAnnotation] is read into Existing.
func FromObject(obj *corev1.Node, source string) (*Node, error) {
	if obj == nil {
		return nil, fmt.Errorf("%s: no node", source)
	}
	o := obj.DeepCopy()
	n := &Node{Object: o, Source: source}
	if o.Name == "" {
		return nil, fmt.Errorf("%s: metadata.name: required; expected the node's name", source)
	}
	if o.Status.Allocatable == nil {
		o.Status.Allocatable = o.Status.Capacity.DeepCopy()
		if o.Status.Allocatable == nil {
			o.Status.Allocatable = corev1.ResourceList{}
		}
		if len(o.Status.Capacity) > 0 {
			n.Notes = append(n.Notes, "status.allocatable copied from status.capacity")
		}
	}
	if _, ok := o.Status.Allocatable[corev1.ResourcePods]; !ok {
		o.Status.Allocatable[corev1.ResourcePods] = *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI)
		n.Notes = append(n.Notes, fmt.Sprintf("pods: %d (the kubelet's default --max-pods; the node sets none)", DefaultMaxPods))
	}
	if v, ok := o.Annotations[ExistingPodsAnnotation]; ok {
		pods, err := ParseExisting(v)
		if err != nil {
			return nil, fmt.Errorf("%s: metadata.annotations[%s]: %v", source, ExistingPodsAnnotation, err)
		}
		n.Existing = pods
	}
	return n, nil
}

// Play makes this machine's node play the node name, for a pod bound to
// it (spec.nodeName, as in a pod copied with kubectl get pod -o yaml): the
// Node takes that name and kubernetes.io/hostname label, so that the
// kubelet's admission (nodename.Fits) and a PersistentVolume's node
// affinity on the hostname see the pod's own node; capacity, other labels
// and taints stay this machine's. One warning says so and how to give the
// real Node.
func (n *Node) Play(name string) {
	if name == "" || name == n.Name() {
		return
	}
	was := n.Name()
	n.Object.Name = name
	if n.Object.Labels == nil {
		n.Object.Labels = map[string]string{}
	}
	n.Object.Labels[corev1.LabelHostname] = name
	n.Source = fmt.Sprintf("this machine %s, playing node %s", was, name)
	n.Warnings = append(n.Warnings, fmt.Sprintf(
		"the pod's spec.nodeName is %s, not this machine (%s): this machine plays node %s (its name and kubernetes.io/hostname label; capacity, other labels and taints are this machine's); --node FILE gives node %s's own Node object (kubectl get node %s -o yaml)",
		name, was, name, name, name))
}
