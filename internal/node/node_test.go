package node

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLoadTestdataNodes(t *testing.T) {
	for _, tc := range []struct {
		file, name, cpu, mem string
		taints               int
	}{
		{"small.yaml", "small", "1", "512Mi", 0},
		{"tainted.yaml", "tainted", "4", "8Gi", 2},
		{"ssd.yaml", "ssd", "4", "8Gi", 0},
	} {
		n, err := Load(filepath.Join("..", "..", "testdata", "nodes", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		a := n.Object.Status.Allocatable
		if n.Name() != tc.name || a.Cpu().String() != tc.cpu || a.Memory().String() != tc.mem || a.Pods().Value() != 110 || len(n.Object.Spec.Taints) != tc.taints {
			t.Errorf("%s: %s cpu %s memory %s pods %d taints %d", tc.file, n.Name(), a.Cpu(), a.Memory(), a.Pods().Value(), len(n.Object.Spec.Taints))
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"", "empty file; expected a v1 Node"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", `apiVersion "v1", kind "Pod"; expected apiVersion v1, kind Node`},
		{"apiVersion: v1\nkind: Node\nmetadata: {name: x}\nstatus: {capacity: {cpu: lots}}\n", "quantities must match"},
		{"apiVersion: v1\nkind: Node\nmetadata: {name: x}\nspec: {taintz: []}\n", `unknown field "taintz"`},
		{"apiVersion: v1\nkind: Node\nmetadata: {}\n", "metadata.name: required"},
		{"apiVersion: v1\nkind: Node\nmetadata:\n  name: x\n  annotations: {podstep.dev/existing-pods: \"a cpu=lots\"}\n", "not a quantity"},
	} {
		_, err := Parse("n.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "n.yaml: ") {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.doc, err, tc.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	n, err := Parse("n.yaml", []byte("apiVersion: v1\nkind: Node\nmetadata: {name: x}\nstatus: {capacity: {cpu: '2'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n.Object.Status.Allocatable.Cpu().String() != "2" || n.Object.Status.Allocatable.Pods().Value() != DefaultMaxPods || len(n.Notes) != 2 {
		t.Errorf("allocatable %v, notes %q", n.Object.Status.Allocatable, n.Notes)
	}
	l := Local()
	if l.Name() == "" || l.Object.Labels[corev1.LabelOSStable] == "" || l.Object.Status.Allocatable.Cpu().IsZero() {
		t.Errorf("Local() = %+v", l.Object)
	}
}

func TestParseExisting(t *testing.T) {
	pods, err := ParseExisting("web-0 cpu=500m memory=256Mi hostPort=8080\n# comment\n\ndns hostPort=10.0.0.1:53/udp\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0].Name != "web-0" || pods[0].Spec.Containers[0].Resources.Requests.Cpu().String() != "500m" {
		t.Fatalf("pods = %+v", pods)
	}
	p := pods[1].Spec.Containers[0].Ports[0]
	if p.HostIP != "10.0.0.1" || p.HostPort != 53 || p.Protocol != corev1.ProtocolUDP {
		t.Errorf("port = %+v", p)
	}
	for _, bad := range []string{"a hostPort=0", "a hostPort=80/ICMP", "a cpu", "a hostPort=x"} {
		if _, err := ParseExisting(bad); err == nil {
			t.Errorf("ParseExisting(%q) succeeded", bad)
		}
	}
}

func testNode() *Node {
	return &Node{Object: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/os": "linux", "disktype": "ssd"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("2"),
		}},
	}}
}

func pod(mut func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if mut != nil {
		mut(p)
	}
	return p
}

func requests(cpu, mem string) corev1.ResourceRequirements {
	r := corev1.ResourceList{}
	if cpu != "" {
		r[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		r[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.ResourceRequirements{Requests: r}
}

// TestAdmit is a table of pods and nodes, each with the kubelet's reason
// and message.
func TestAdmit(t *testing.T) {
	prio := int32(2000001000)
	strict := corev1.SupplementalGroupsPolicyStrict
	cases := []struct {
		name    string
		pod     func(*corev1.Pod)
		node    func(*Node)
		reason  string
		message string
	}{
		{name: "fits", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("500m", "64Mi") }},
		{"out of cpu", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("8", "") }, nil,
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 2000"},
		{"cpu used by others", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("1", "") },
			func(n *Node) { n.Existing, _ = ParseExisting("a cpu=1500m") },
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"},
		{"out of memory", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("", "2Gi") }, nil,
			"OutOfmemory", "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824"},
		{"init container dominates", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "busybox", Resources: requests("3", "")}}
		}, nil, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{"overhead counts", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = requests("1500m", "")
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}
		}, nil, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 2100, used: 0, capacity: 2000"},
		{"out of pods first", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("8", "") },
			func(n *Node) { n.Existing, _ = ParseExisting("a\nb") },
			"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
		{"missing extended resource ignored", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}
		}, nil, "", ""},
		{"extended resource short", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("2")}}
		}, func(n *Node) { n.Object.Status.Allocatable["example.com/gpu"] = resource.MustParse("1") },
			"OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1"},
		{"node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disktype": "hdd"} }, nil,
			"NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"node selector matches", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disktype": "ssd"} }, nil, "", ""},
		{"required affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}}}}
		}, nil, "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "other" }, nil,
			"NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{"host port taken", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
		}, func(n *Node) { n.Existing, _ = ParseExisting("web hostPort=10.0.0.1:8080") },
			"NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{"host port other protocol", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolUDP}}
		}, func(n *Node) { n.Existing, _ = ParseExisting("web hostPort=8080") }, "", ""},
		{"NoExecute taint", nil, func(n *Node) {
			n.Object.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}}
		}, "TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{"NoExecute taint tolerated", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}, func(n *Node) {
			n.Object.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}}
		}, "", ""},
		{"NoSchedule taint ignored", nil, func(n *Node) {
			n.Object.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
		}, "", ""},
		{"static pod skips taints", func(p *corev1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.source": "file"} }, func(n *Node) {
			n.Object.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}
		}, "", ""},
		{"os field", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }, nil,
			"PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"},
		{"os label", func(p *corev1.Pod) { p.Labels = map[string]string{"kubernetes.io/os": "windows"} }, nil,
			"PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{"unsafe sysctl", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
		}, nil, "SysctlForbidden", `forbidden sysctl: "net.core.somaxconn" not allowlisted`},
		{"unsafe sysctl allowed", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net/core/somaxconn", Value: "1024"}}}
		}, func(n *Node) { n.AllowedUnsafeSysctls = []string{"net.core.*"} }, "", ""},
		{"safe sysctl with host network", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}}}
		}, nil, "SysctlForbidden", `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{"sysctl before resources", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = requests("8", "")
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "vm.swappiness", Value: "1"}}}
		}, nil, "SysctlForbidden", `forbidden sysctl: "vm.swappiness" not allowlisted`},
		{"memory pressure refuses BestEffort", nil, func(n *Node) {
			n.Object.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}
		}, "Evicted", "The node had condition: [MemoryPressure]. "},
		{"memory pressure admits Burstable", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("100m", "") }, func(n *Node) {
			n.Object.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}
		}, "", ""},
		{"disk pressure refuses all", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("100m", "") }, func(n *Node) {
			n.Object.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}}
		}, "Evicted", "The node had condition: [DiskPressure]. "},
		{"critical pod under pressure", func(p *corev1.Pod) { p.Spec.Priority = &prio }, func(n *Node) {
			n.Object.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}}
		}, "", ""},
		{"strict supplemental groups", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
		}, nil, "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node"},
		{"first failure wins: resources before affinity", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = requests("8", "")
			p.Spec.NodeSelector = map[string]string{"disktype": "hdd"}
		}, nil, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 2000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode()
			if tc.node != nil {
				tc.node(n)
			}
			v := Admit(pod(tc.pod), n)
			if v.Admit != (tc.reason == "") || v.Reason != tc.reason || v.Message != tc.message {
				t.Errorf("Admit = %v %q %q, want %q %q", v.Admit, v.Reason, v.Message, tc.reason, tc.message)
			}
			failed := 0
			for _, c := range v.Checks {
				if !c.OK {
					failed++
				}
				if c.Name == "" || c.Detail == "" {
					t.Errorf("check without name or detail: %+v", c)
				}
			}
			if (failed == 0) != v.Admit {
				t.Errorf("%d failed checks, admit %v: %+v", failed, v.Admit, v.Checks)
			}
		})
	}
}
