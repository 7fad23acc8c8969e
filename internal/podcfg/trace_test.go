package podcfg

import (
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/reason"
)

// Values hand-transcribed from the kubelet v1.37 traces
// (kubelet-cri-traces/simple.calls.txt and simple-qos.calls.txt).
const (
	traceKRef      = "/kref"
	tracePodName   = "simple-kref-node" // the kubelet renamed the static pod <pod>-<node>
	traceImageID   = "sha256:2af85e808c9387cc03cef1c09d376075ca7077c5e1722f414aa53bcd67dfbc5f"
	traceImageName = "docker.io/library/busybox:latest"
)

func TestMatchesKubeletTrace(t *testing.T) {
	for _, tc := range []struct {
		manifest, seen, cgroupParent, termLog string
		qos                                   bool
	}{
		{"simple.yaml", "2026-11-21T14:43:38.126273813Z", "", "4d93aa4e", false},
		{"simple-qos.yaml", "2026-11-21T14:56:41.220898493Z", "/kubepods/besteffort/pod89e9b074e7933f8ee28ce915e3a7092c", "19f62276", true},
	} {
		t.Run(tc.manifest, func(t *testing.T) {
			pod := loadPod(t, tc.manifest)
			// Reproduce the kubelet's static-pod rename, which podstep does not do.
			pod.Name = tracePodName
			o := traceOptions(t, tc.qos)
			o.RootDir = traceKRef + "/kubelet-root"
			o.Seen = mustTime(t, tc.seen)

			sb, warnings, err := SandboxConfig(pod, 0, o)
			if err != nil {
				t.Fatal(err)
			}
			// RunPodSandbox
			eq(t, "metadata.name", sb.Metadata.Name, "simple-kref-node")
			eq(t, "metadata.namespace", sb.Metadata.Namespace, "default")
			eq(t, "metadata.uid", sb.Metadata.Uid, "89e9b074e7933f8ee28ce915e3a7092c")
			eq(t, "metadata.attempt", sb.Metadata.Attempt, uint32(0))
			eq(t, "hostname", sb.Hostname, "simple-kref-node")
			eq(t, "log_directory", sb.LogDirectory, "/var/log/pods/default_simple-kref-node_89e9b074e7933f8ee28ce915e3a7092c")
			eq(t, "dns_config.servers", sb.DnsConfig.Servers, []string{"10.255.255.53"})
			eq(t, "dns_config.searches", len(sb.DnsConfig.Searches), 0)
			eq(t, "dns_config.options", len(sb.DnsConfig.Options), 0)
			eq(t, "port_mappings", len(sb.PortMappings), 0)
			eq(t, "labels", sb.Labels, map[string]string{
				"app": "simple", "io.kubernetes.pod.name": "simple-kref-node",
				"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "89e9b074e7933f8ee28ce915e3a7092c",
			})
			eq(t, "annotations", sb.Annotations, map[string]string{
				"kubernetes.io/config.hash":   "89e9b074e7933f8ee28ce915e3a7092c",
				"kubernetes.io/config.seen":   tc.seen,
				"kubernetes.io/config.source": "file",
			})
			eq(t, "linux.cgroup_parent", sb.Linux.CgroupParent, tc.cgroupParent)
			ssc := sb.Linux.SecurityContext
			eq(t, "sandbox namespace_options", jsonOf(t, ssc.NamespaceOptions), `{"pid":"CONTAINER","userns_options":{"mode":"NODE"}}`)
			eq(t, "sandbox seccomp", jsonOf(t, ssc.Seccomp), `{}`)
			eq(t, "sandbox security_context", jsonOf(t, ssc), `{"namespace_options":{"pid":"CONTAINER","userns_options":{"mode":"NODE"}},"seccomp":{}}`)
			eq(t, "linux.overhead", jsonOf(t, sb.Linux.Overhead), `{}`)
			eq(t, "linux.resources", jsonOf(t, sb.Linux.Resources), `{"cpu_period":"100000","cpu_shares":"2"}`)
			if len(warnings) != 1 || warnings[0].Reason != reason.MissingClusterDNS {
				t.Errorf("warnings = %v, want one MissingClusterDNS (the trace's kubelet has no cluster DNS)", warnings)
			}

			// CreateContainer
			podDir := filepath.Join(o.RootDir, "pods", string(pod.UID))
			c := &pod.Spec.Containers[0]
			cc, err := ContainerConfig(pod, sb, ContainerInput{
				Container:          c,
				ImageRef:           traceImageID,
				PodIP:              "10.88.90.2",
				PodIPs:             []string{"10.88.90.2"},
				TerminationLogPath: filepath.Join(podDir, "containers", "main", tc.termLog),
				EtcHostsPath:       filepath.Join(podDir, "etc-hosts"),
			}, o)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "metadata", jsonOf(t, cc.Metadata), `{"name":"main"}`)
			eq(t, "image.image", cc.Image.Image, traceImageID)
			eq(t, "image.user_specified_image", cc.Image.UserSpecifiedImage, traceImageName)
			eq(t, "command", cc.Command, []string{"sleep", "3600"})
			eq(t, "args", len(cc.Args), 0)
			eq(t, "envs", len(cc.Envs), 0)
			var mounts [][2]string
			for _, m := range cc.Mounts {
				mounts = append(mounts, [2]string{m.ContainerPath, m.HostPath})
			}
			eq(t, "mounts", mounts, [][2]string{
				{"/etc/hosts", "/kref/kubelet-root/pods/89e9b074e7933f8ee28ce915e3a7092c/etc-hosts"},
				{"/dev/termination-log", "/kref/kubelet-root/pods/89e9b074e7933f8ee28ce915e3a7092c/containers/main/" + tc.termLog},
			})
			eq(t, "log_path", cc.LogPath, "main/0.log")
			eq(t, "container labels", cc.Labels, map[string]string{
				"io.kubernetes.container.name": "main", "io.kubernetes.pod.name": "simple-kref-node",
				"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "89e9b074e7933f8ee28ce915e3a7092c",
			})
			eq(t, "container annotations", cc.Annotations, map[string]string{
				"io.kubernetes.container.hash":                     "85580d84",
				"io.kubernetes.container.restartCount":             "0",
				"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
				"io.kubernetes.container.terminationMessagePolicy": "File",
				"io.kubernetes.pod.terminationGracePeriod":         "30",
			})
			eq(t, "linux.resources", jsonOf(t, cc.Linux.Resources),
				`{"cpu_period":"100000","cpu_shares":"2","oom_score_adj":"1000","hugepage_limits":[{"page_size":"2MB"},{"page_size":"1GB"}]}`)
			csc := cc.Linux.SecurityContext
			eq(t, "masked_paths", csc.MaskedPaths, []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"})
			eq(t, "readonly_paths", csc.ReadonlyPaths, []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"})
			eq(t, "container security_context", jsonOf(t, csc),
				`{"namespace_options":{"pid":"CONTAINER","userns_options":{"mode":"NODE"}},"run_as_user":{},"masked_paths":["/proc/asound","/proc/acpi","/proc/interrupts","/proc/kcore","/proc/keys","/proc/latency_stats","/proc/timer_list","/proc/timer_stats","/proc/sched_debug","/proc/scsi","/sys/firmware","/sys/devices/virtual/powercap"],"readonly_paths":["/proc/bus","/proc/fs","/proc/irq","/proc/sys","/proc/sysrq-trigger"],"seccomp":{"profile_type":"Unconfined"}}`)
		})
	}
}

func TestContainerHashMatchesTrace(t *testing.T) {
	pod := loadPod(t, "simple.yaml")
	eq(t, "hash", ContainerHash(&pod.Spec.Containers[0]), "85580d84")
	// Only name and image count (pickFieldsToHash): command changes keep the hash.
	c := pod.Spec.Containers[0].DeepCopy()
	c.Command = []string{"true"}
	eq(t, "hash ignores command", ContainerHash(c), "85580d84")
	c.Image = "busybox:1.36"
	if ContainerHash(c) == "85580d84" {
		t.Error("hash does not depend on the image")
	}
}

func TestTerminationLogName(t *testing.T) {
	a, b := TerminationLogName(), TerminationLogName()
	if len(a) != 8 || a == b {
		t.Errorf("TerminationLogName() = %q, %q; want two different 8-hex names", a, b)
	}
	for _, r := range a {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			t.Errorf("%q is not hex", a)
		}
	}
}

func jsonOf(t *testing.T, m proto.Message) string {
	t.Helper()
	return string(stableJSON(t, m))
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// TestMatchesKubeletInitTrace checks init.calls.txt: the init container gets
// the same kind of config as a regular one (its own hash, log path, mounts).
func TestMatchesKubeletInitTrace(t *testing.T) {
	pod := loadPod(t, "init.yaml")
	pod.Name, pod.UID = "init-kref-node", "a737085854bbd31c81806baaf3b9834e"
	o := traceOptions(t, false)
	o.RootDir = traceKRef + "/kubelet-root"
	sb, _, err := SandboxConfig(pod, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "log_directory", sb.LogDirectory, "/var/log/pods/default_init-kref-node_a737085854bbd31c81806baaf3b9834e")
	eq(t, "labels", sb.Labels, map[string]string{
		"app": "init", "io.kubernetes.pod.name": "init-kref-node",
		"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "a737085854bbd31c81806baaf3b9834e",
	})
	podDir := filepath.Join(o.RootDir, "pods", string(pod.UID))
	for _, tc := range []struct {
		c             *corev1.Container
		init          bool
		hash, termLog string
		cmd           []string
	}{
		{&pod.Spec.InitContainers[0], true, "a6e2928c", "97548470", []string{"sh", "-c", "echo init; exit 0"}},
		{&pod.Spec.Containers[0], false, "85580d84", "826248dd", []string{"sleep", "3600"}},
	} {
		cc, err := ContainerConfig(pod, sb, ContainerInput{
			Container: tc.c, Init: tc.init, ImageRef: traceImageID, PodIPs: []string{"10.88.90.3"},
			TerminationLogPath: filepath.Join(podDir, "containers", tc.c.Name, tc.termLog),
			EtcHostsPath:       filepath.Join(podDir, "etc-hosts"),
		}, o)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, tc.c.Name+" hash", cc.Annotations["io.kubernetes.container.hash"], tc.hash)
		eq(t, tc.c.Name+" command", cc.Command, tc.cmd)
		eq(t, tc.c.Name+" log_path", cc.LogPath, tc.c.Name+"/0.log")
		eq(t, tc.c.Name+" mounts", []string{cc.Mounts[0].HostPath, cc.Mounts[1].HostPath}, []string{
			"/kref/kubelet-root/pods/a737085854bbd31c81806baaf3b9834e/etc-hosts",
			"/kref/kubelet-root/pods/a737085854bbd31c81806baaf3b9834e/containers/" + tc.c.Name + "/" + tc.termLog,
		})
		eq(t, tc.c.Name+" labels", cc.Labels, map[string]string{
			"io.kubernetes.container.name": tc.c.Name, "io.kubernetes.pod.name": "init-kref-node",
			"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "a737085854bbd31c81806baaf3b9834e",
		})
		eq(t, tc.c.Name+" resources", jsonOf(t, cc.Linux.Resources),
			`{"cpu_period":"100000","cpu_shares":"2","oom_score_adj":"1000","hugepage_limits":[{"page_size":"2MB"},{"page_size":"1GB"}]}`)
	}
}
