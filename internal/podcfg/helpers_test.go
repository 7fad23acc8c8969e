package podcfg

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// traceUID is the UID the kubelet gave the static pods of the traces.
const traceUID = "89e9b074e7933f8ee28ce915e3a7092c"

// testNode is the node of the tests and golden files: 4 CPUs and 8Gi of
// memory, as capacity and as allocatable.
func testNode(name string) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
	}
}

// testHugePageSizes are the trace machine's huge page sizes, in its
// directory order.
var testHugePageSizes = []int64{2 << 20, 1 << 30}

// loadPod reads a testdata manifest and applies the API defaults the kubelet
// would see (the manifest package does this for podstep).
func loadPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		t.Fatal(err)
	}
	pod.UID = types.UID(traceUID)
	defaultPod(pod)
	return pod
}

func defaultPod(pod *corev1.Pod) {
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if pod.Spec.DNSPolicy == "" {
		pod.Spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		g := int64(30)
		pod.Spec.TerminationGracePeriodSeconds = &g
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if c.TerminationMessagePath == "" {
				c.TerminationMessagePath = corev1.TerminationMessagePathDefault
			}
			if c.TerminationMessagePolicy == "" {
				c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
			}
			for j := range c.Ports {
				if c.Ports[j].Protocol == "" {
					c.Ports[j].Protocol = corev1.ProtocolTCP
				}
			}
		}
	}
}

// writeResolvConf writes a temporary resolv.conf and returns its path.
func writeResolvConf(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// traceOptions are the settings of the kubelet that recorded the traces.
func traceOptions(t *testing.T, qos bool) Options {
	seen, _ := time.Parse(time.RFC3339Nano, "2026-11-21T14:43:38.126273813Z")
	return Options{
		RootDir:       "/kref/kubelet-root",
		LogDir:        "/var/log/pods",
		Node:          testNode("kref-node"),
		HugePageSizes: testHugePageSizes,
		CgroupDriver:  "cgroupfs",
		CgroupsPerQOS: qos,
		CgroupRoot:    "/",
		ResolvConf:    writeResolvConf(t, "# generated\nnameserver 10.255.255.53\n"),
		Seen:          seen,
	}
}

// fakeEnv is an EnvSource over maps keyed "namespace/name".
type fakeEnv struct {
	cms      map[string]*corev1.ConfigMap
	secrets  map[string]*corev1.Secret
	services []*corev1.Service
}

func (f fakeEnv) ServiceList() []*corev1.Service { return f.services }

func (f fakeEnv) ConfigMap(ns, name string) (*corev1.ConfigMap, bool) {
	c, ok := f.cms[ns+"/"+name]
	return c, ok
}

func (f fakeEnv) Secret(ns, name string) (*corev1.Secret, bool) {
	s, ok := f.secrets[ns+"/"+name]
	return s, ok
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
