package podcfg

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestDownwardAPIEnv: the env vars of the downward API as
// podFieldSelectorRuntimeValue and containerResourceRuntimeValue resolve
// them, on the pod defaultPodLimitsForDownwardAPI made (the node's
// allocatable is 4 cpu, 8Gi memory here: helpers_test.go).
func TestDownwardAPIEnv(t *testing.T) {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	rsrc := func(container, res, divisor string) *corev1.EnvVarSource {
		fs := &corev1.ResourceFieldSelector{ContainerName: container, Resource: res}
		if divisor != "" {
			fs.Divisor = resource.MustParse(divisor)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: fs}
	}
	podLimits := func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{Limits: res("cpu", "2", "memory", "1Gi")}
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Pod) // applied before the env var is resolved
		init   bool              // the env var is the init container's
		src    *corev1.EnvVarSource
		want   string
		err    string
	}{
		{name: "labels", src: field("metadata.labels"), want: `app="web"`},
		{name: "annotation subscript", src: field("metadata.annotations['note']"), want: "hi"},
		{name: "config annotation", src: field("metadata.annotations['kubernetes.io/config.source']"), want: "file"},
		{name: "spec.host", src: field("spec.host"), want: "node-1"},
		{name: "restartPolicy", src: field("spec.restartPolicy"), err: "unsupported fieldPath: spec.restartPolicy"},
		{name: "bad subscript", src: field("spec.nodeName['x']"), err: "field label does not support subscript: spec.nodeName['x']"},
		{name: "version", src: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}, err: "unsupported pod version: v2"},
		{name: "own limit", src: rsrc("", "limits.memory", "1Mi"), want: "128"},
		{name: "no cpu limit: allocatable", src: rsrc("", "limits.cpu", "1m"), want: "4000"},
		{name: "zero cpu limit: allocatable", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("0")
		}, src: rsrc("", "limits.cpu", ""), want: "4"},
		{name: "requests as they are", src: rsrc("", "requests.memory", "1Mi"), want: "64"},
		{name: "other container: allocatable", src: rsrc("side", "limits.memory", "1Gi"), want: "8"},
		{name: "pod-level limits first", mutate: podLimits, src: rsrc("side", "limits.memory", "1Mi"), want: "1024"},
		{name: "pod-level cpu", mutate: podLimits, src: rsrc("", "limits.cpu", ""), want: "2"},
		// defaultPodLimitsForDownwardAPI defaults the pod's regular
		// containers and the container itself, not the pod's init
		// containers: one named by containerName keeps its limits.
		{name: "init by name: not defaulted", src: rsrc("setup", "limits.cpu", ""), want: "0"},
		{name: "init itself: defaulted", init: true, src: rsrc("", "limits.cpu", ""), want: "4"},
		{name: "init names itself: not defaulted", init: true, src: rsrc("setup", "limits.cpu", ""), want: "0"},
		{name: "unknown container", src: rsrc("gone", "limits.cpu", ""), err: "container gone not found"},
		{name: "unknown resource", src: rsrc("", "limits.pods", ""), err: "unsupported container resource : limits.pods"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := ctr("app", res("cpu", "250m", "memory", "64Mi"), res("memory", "128Mi"))
			pod := podWith(app, ctr("side", nil, nil))
			pod.Spec.InitContainers = []corev1.Container{ctr("setup", nil, nil)}
			pod.Labels = map[string]string{"app": "web"}
			pod.Annotations = map[string]string{"note": "hi"}
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			c := &pod.Spec.Containers[0]
			if tc.init {
				c = &pod.Spec.InitContainers[0]
			}
			c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: tc.src}}
			cfg, err := ContainerConfig(pod, nil, envInput(c, nil), Options{Node: testNode("node-1")})
			var ce *ConfigError
			switch {
			case tc.err != "":
				if !errors.As(err, &ce) || ce.Msg != tc.err {
					t.Errorf("error %v, want ConfigError %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				eq(t, "env", envPairs(cfg), []string{"X=" + tc.want})
			}
		})
	}
}

// TestDownwardAPINode: the defaults come from Options.Node, the node the
// pod runs on: its allocatable (not its capacity) for a missing limit,
// ephemeral-storage included, and its name for spec.nodeName; its memory
// capacity is what oom_score_adj is computed against.
func TestDownwardAPINode(t *testing.T) {
	n := testNode("worker-7")
	n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("7Gi")
	n.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("20Gi")
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	rsrc := func(res, divisor string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res, Divisor: resource.MustParse(divisor)}}
	}
	c := ctr("app", res("memory", "1Gi"), nil)
	c.Env = []corev1.EnvVar{
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "MEM", ValueFrom: rsrc("limits.memory", "1Mi")},
		{Name: "EPH", ValueFrom: rsrc("limits.ephemeral-storage", "1Gi")},
		{Name: "CPU", ValueFrom: rsrc("limits.cpu", "1m")},
	}
	pod := podWith(c)
	cfg, err := ContainerConfig(pod, nil, envInput(&pod.Spec.Containers[0], nil), Options{Node: n})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "env", envPairs(cfg), []string{"NODE=worker-7", "MEM=7168", "EPH=20", "CPU=4000"})
	// Burstable, 1Gi requested of the 8Gi capacity: 1000 - 1000/8 = 875.
	eq(t, "oom_score_adj", cfg.Linux.Resources.OomScoreAdj, int64(875))

	cfg, err = ContainerConfig(pod, nil, envInput(&pod.Spec.Containers[0], nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "env without a node", envPairs(cfg), []string{"NODE=", "MEM=0", "EPH=0", "CPU=0"})
}
