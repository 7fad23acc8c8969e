package podcfg

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func res(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func podWith(cs ...corev1.Container) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "1234-abcd"},
		Spec:       corev1.PodSpec{Containers: cs},
	}
	defaultPod(p)
	return p
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestQOSClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"no resources", podWith(ctr("a", nil, nil)), corev1.PodQOSBestEffort},
		{"requests only", podWith(ctr("a", res("cpu", "100m"), nil)), corev1.PodQOSBurstable},
		{"equal req/lim", podWith(ctr("a", res("cpu", "1", "memory", "1Gi"), res("cpu", "1", "memory", "1Gi"))), corev1.PodQOSGuaranteed},
		{"limits only (requests default to limits)", podWith(ctr("a", nil, res("cpu", "1", "memory", "1Gi"))), corev1.PodQOSGuaranteed},
		{"cpu limit only", podWith(ctr("a", nil, res("cpu", "1"))), corev1.PodQOSBurstable},
		{"one container best effort", podWith(ctr("a", res("cpu", "1", "memory", "1Gi"), res("cpu", "1", "memory", "1Gi")), ctr("b", nil, nil)), corev1.PodQOSBurstable},
		{"req < lim", podWith(ctr("a", res("cpu", "500m", "memory", "1Gi"), res("cpu", "1", "memory", "1Gi"))), corev1.PodQOSBurstable},
		{"non-QoS resource only", podWith(ctr("a", res("ephemeral-storage", "1Gi"), nil)), corev1.PodQOSBestEffort},
	} {
		t.Run(tc.name, func(t *testing.T) { eq(t, "QOSClass", QOSClass(tc.pod), tc.want) })
	}
	p := podWith(ctr("a", nil, nil))
	p.Status.QOSClass = corev1.PodQOSGuaranteed
	eq(t, "status.qosClass wins", QOSClass(p), corev1.PodQOSGuaranteed)
}

func TestCPUMath(t *testing.T) {
	for _, tc := range []struct{ milli, shares, quota int64 }{
		{0, 2, 0}, {1, 2, 1000}, {5, 5, 1000}, {100, 102, 10000}, {250, 256, 25000},
		{1000, 1024, 100000}, {1500, 1536, 150000}, {300000, 262144, 30000000},
	} {
		eq(t, "MilliCPUToShares", MilliCPUToShares(tc.milli), tc.shares)
		eq(t, "MilliCPUToQuota", MilliCPUToQuota(tc.milli, 100000), tc.quota)
	}
}

func TestContainerResources(t *testing.T) {
	o := Options{Node: testNode("n"), HugePageSizes: testHugePageSizes}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"best effort", podWith(ctr("a", nil, nil)),
			`{"cpu_period":"100000","cpu_shares":"2","oom_score_adj":"1000","hugepage_limits":[{"page_size":"2MB"},{"page_size":"1GB"}]}`},
		{"guaranteed", podWith(ctr("a", res("cpu", "500m", "memory", "256Mi"), res("cpu", "500m", "memory", "256Mi", "hugepages-2Mi", "4Mi"))),
			`{"cpu_period":"100000","cpu_quota":"50000","cpu_shares":"512","memory_limit_in_bytes":"268435456","oom_score_adj":"-997","hugepage_limits":[{"page_size":"2MB","limit":"4194304"},{"page_size":"1GB"}]}`},
		// 1000 - 1000*1Gi/8Gi = 875
		{"burstable", podWith(ctr("a", res("cpu", "250m", "memory", "1Gi"), res("cpu", "2"))),
			`{"cpu_period":"100000","cpu_quota":"200000","cpu_shares":"256","oom_score_adj":"875","hugepage_limits":[{"page_size":"2MB"},{"page_size":"1GB"}]}`},
		// tiny request: 1000 - 0 = 1000 → 999 (never as low as best effort)
		{"burstable tiny memory", podWith(ctr("a", res("memory", "1"), nil)),
			`{"cpu_period":"100000","cpu_shares":"2","oom_score_adj":"999","hugepage_limits":[{"page_size":"2MB"},{"page_size":"1GB"}]}`},
		// request above capacity: clamped to 3
		{"burstable huge memory", podWith(ctr("a", res("memory", "16Gi"), nil)),
			`{"cpu_period":"100000","cpu_shares":"2","oom_score_adj":"3","hugepage_limits":[{"page_size":"2MB"},{"page_size":"1GB"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eq(t, "resources", jsonOf(t, containerResources(tc.pod, &tc.pod.Spec.Containers[0], o)), tc.want)
		})
	}
	crit := podWith(ctr("a", res("memory", "1Gi"), nil))
	crit.Spec.PriorityClassName = "system-node-critical"
	eq(t, "node critical", oomScoreAdj(crit, &crit.Spec.Containers[0], 8<<30, ""), int64(-997))
}

func TestSandboxResourcesAndCgroupParent(t *testing.T) {
	o := Options{CgroupsPerQOS: true, CgroupRoot: "/", ResolvConf: writeResolvConf(t, "nameserver 1.1.1.1\n")}
	g := podWith(ctr("a", res("cpu", "1", "memory", "1Gi"), res("cpu", "1", "memory", "1Gi")),
		ctr("b", res("cpu", "500m", "memory", "512Mi"), res("cpu", "500m", "memory", "512Mi")))
	g.Spec.Overhead = res("cpu", "250m", "memory", "120Mi")
	sb, _, err := SandboxConfig(g, 1, o)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "guaranteed sandbox resources", jsonOf(t, sb.Linux.Resources), `{"cpu_period":"100000","cpu_quota":"150000","cpu_shares":"1536","memory_limit_in_bytes":"1610612736"}`)
	eq(t, "overhead", jsonOf(t, sb.Linux.Overhead), `{"cpu_period":"100000","cpu_quota":"25000","cpu_shares":"256","memory_limit_in_bytes":"125829120"}`)
	eq(t, "attempt", sb.Metadata.Attempt, uint32(1))
	eq(t, "cgroupfs guaranteed", sb.Linux.CgroupParent, "/kubepods/pod1234-abcd")

	b := podWith(ctr("a", res("cpu", "100m"), nil))
	eq(t, "cgroupfs burstable", CgroupParent(b, o), "/kubepods/burstable/pod1234-abcd")
	o.CgroupDriver = "systemd"
	eq(t, "systemd burstable", CgroupParent(b, o), "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice")
	eq(t, "systemd guaranteed", CgroupParent(g, o), "/kubepods.slice/kubepods-pod1234_abcd.slice")
	be := podWith(ctr("a", nil, nil))
	eq(t, "systemd besteffort", CgroupParent(be, o), "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234_abcd.slice")
	o.CgroupsPerQOS = false
	eq(t, "no QoS cgroups", CgroupParent(be, o), "")
}

func envInput(c *corev1.Container, src EnvSource) ContainerInput {
	return ContainerInput{Container: c, ImageRef: "sha256:x", PodIP: "10.0.0.5", PodIPs: []string{"10.0.0.5", "fd00::5"}, Env: src}
}

func envPairs(cfg *runtimeapi.ContainerConfig) []string {
	var out []string
	for _, kv := range cfg.Envs {
		out = append(out, kv.Key+"="+string(kv.Value))
	}
	return out
}

func TestEnvOrderAndSources(t *testing.T) {
	src := fakeEnv{
		cms: map[string]*corev1.ConfigMap{"ns/cfg": {Data: map[string]string{"B": "from-cm", "A": "cm-a", "LEVEL": "debug"}}},
		secrets: map[string]*corev1.Secret{"ns/sec": {Data: map[string][]byte{"TOKEN": []byte("s3cret")}},
			"ns/all": {Data: map[string][]byte{"USER": []byte("u"), "PASS": []byte("p")}}},
	}
	c := &corev1.Container{
		Name: "app", Image: "busybox",
		Command: []string{"sh", "-c", "echo $(GREETING) $(MISSING) $$(ESCAPED)"},
		Args:    []string{"$(POD_NAME)"},
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "all"}}},
		},
		Env: []corev1.EnvVar{
			{Name: "GREETING", Value: "hello $(A)"},
			{Name: "A", Value: "override"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "POD_IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
			{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "SA", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
			{Name: "MEM_LIMIT_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU_REQ", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "LVL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "LEVEL"}}},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "TOKEN"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "x", Optional: ptrTo(true)}}},
			{Name: "LATE", Value: "$(LATER)"},
			{Name: "LATER", Value: "x"},
		},
		Resources: corev1.ResourceRequirements{Requests: res("cpu", "250m", "memory", "64Mi"), Limits: res("memory", "128Mi")},
	}
	pod := podWith(*c)
	pod.Labels = map[string]string{"app": "web"}
	pod.Spec.ServiceAccountName = "default"
	o := Options{Node: testNode("node-1"), ResolvConf: writeResolvConf(t, "")}
	sb, _, err := SandboxConfig(pod, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ContainerConfig(pod, sb, envInput(&pod.Spec.Containers[0], src), o)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "envs", envPairs(cfg), []string{
		"A=override", "B=from-cm", "LEVEL=debug", "DB_PASS=p", "DB_USER=u",
		"GREETING=hello cm-a", "POD_NAME=p", "POD_NS=ns", "POD_UID=1234-abcd", "APP=web",
		"POD_IP=10.0.0.5", "POD_IPS=10.0.0.5,fd00::5", "NODE=node-1", "SA=default",
		"MEM_LIMIT_MI=128", "CPU_REQ=250", "CPU_LIMIT=4",
		"LVL=debug", "TOKEN=s3cret", "LATE=$(LATER)", "LATER=x",
	})
	eq(t, "command", cfg.Command, []string{"sh", "-c", "echo hello cm-a $(MISSING) $(ESCAPED)"})
	eq(t, "args", cfg.Args, []string{"p"})
	eq(t, "SecretEnvNames", SecretEnvNames(pod, &pod.Spec.Containers[0], src), []string{"DB_PASS", "DB_USER", "TOKEN"})
}

func ptrTo[T any](v T) *T { return &v }

func TestMissingRefsAreConfigErrors(t *testing.T) {
	ref := func(name, key string, opt bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptrTo(opt)}}
	}
	sref := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	src := fakeEnv{cms: map[string]*corev1.ConfigMap{"ns/cfg": {Data: map[string]string{"k": "v"}}}, secrets: map[string]*corev1.Secret{"ns/sec": {}}}
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want string
	}{
		{"configmap missing", corev1.Container{Name: "a", Env: []corev1.EnvVar{{Name: "X", ValueFrom: ref("x", "k", false)}}}, `configmap "x" not found`},
		{"configmap key missing", corev1.Container{Name: "a", Env: []corev1.EnvVar{{Name: "X", ValueFrom: ref("cfg", "K", false)}}}, `couldn't find key K in ConfigMap ns/cfg`},
		{"secret missing", corev1.Container{Name: "a", Env: []corev1.EnvVar{{Name: "X", ValueFrom: sref("nope", "k")}}}, `secret "nope" not found`},
		{"secret key missing", corev1.Container{Name: "a", Env: []corev1.EnvVar{{Name: "X", ValueFrom: sref("sec", "k")}}}, `couldn't find key k in Secret ns/sec`},
		{"envFrom configmap missing", corev1.Container{Name: "a", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}}}, `configmap "gone" not found`},
		{"bad field path", corev1.Container{Name: "a", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}}, `field label not supported: spec.bogus`},
		{"runAsNonRoot with root image", corev1.Container{Name: "a", SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptrTo(true)}},
			`container has runAsNonRoot and image will run as root (pod: "p_ns(1234-abcd)", container: a)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(tc.c)
			_, err := ContainerConfig(pod, nil, envInput(&pod.Spec.Containers[0], src), Options{})
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *ConfigError", err)
			}
			eq(t, "message", ce.Msg, tc.want)
		})
	}
	// Optional and present: fine; nil EnvSource with no references: fine.
	pod := podWith(corev1.Container{Name: "a", Env: []corev1.EnvVar{{Name: "X", ValueFrom: ref("x", "k", true)}, {Name: "Y", ValueFrom: ref("cfg", "k", false)}}})
	cfg, err := ContainerConfig(pod, nil, envInput(&pod.Spec.Containers[0], src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "envs", envPairs(cfg), []string{"Y=v"})
}

func TestPortMappings(t *testing.T) {
	c1 := ctr("web", nil, nil)
	c1.Ports = []corev1.ContainerPort{
		{Name: "http", ContainerPort: 80, HostPort: 8080},
		{ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"},
		{ContainerPort: 9090}, // no hostPort: still sent, host_port 0
		{ContainerPort: 9090}, // duplicate: dropped
		{ContainerPort: 7, Protocol: corev1.ProtocolSCTP, HostIP: "::1", HostPort: 7},
	}
	init := ctr("init", nil, nil)
	init.Ports = []corev1.ContainerPort{{ContainerPort: 1, HostPort: 1}} // init containers are not considered
	pod := podWith(c1)
	pod.Spec.InitContainers = []corev1.Container{init}
	defaultPod(pod)
	var got []string
	for _, pm := range portMappings(pod) {
		got = append(got, jsonOf(t, pm))
	}
	eq(t, "port mappings", got, []string{
		`{"container_port":80,"host_port":8080}`,
		`{"protocol":"UDP","container_port":53,"host_port":5353,"host_ip":"127.0.0.1"}`,
		`{"container_port":9090}`,
		`{"protocol":"SCTP","container_port":7,"host_port":7,"host_ip":"::1"}`,
	})
	cfg, err := ContainerConfig(pod, nil, envInput(&pod.Spec.Containers[0], nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Annotations["io.kubernetes.container.ports"], `[{"name":"http","hostPort":8080,"containerPort":80,"protocol":"TCP"}`) {
		t.Errorf("ports annotation = %s", cfg.Annotations["io.kubernetes.container.ports"])
	}
}

func TestDNSPolicies(t *testing.T) {
	host := writeResolvConf(t, "# comment\nnameserver 192.168.1.1\nnameserver 192.168.1.2\nsearch old.example\nsearch corp.example. home.\noptions timeout:2 ndots:2\noptions timeout:3\n")
	base := Options{ResolvConf: host, ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}
	noDNS := Options{ResolvConf: host, ClusterDomain: "cluster.local"}
	for _, tc := range []struct {
		name         string
		policy       corev1.DNSPolicy
		hostNet      bool
		dnsConfig    *corev1.PodDNSConfig
		o            Options
		want         string
		wantWarnings []string
	}{
		{"ClusterFirst", corev1.DNSClusterFirst, false, nil, base,
			`{"servers":["10.96.0.10"],"searches":["ns.svc.cluster.local","svc.cluster.local","cluster.local","corp.example","home"],"options":["ndots:5"]}`, nil},
		{"ClusterFirst without cluster DNS", corev1.DNSClusterFirst, false, nil, noDNS,
			`{"servers":["192.168.1.1","192.168.1.2"],"searches":["corp.example","home"],"options":["timeout:3","ndots:2"]}`, []string{"MissingClusterDNS"}},
		{"ClusterFirst on host network", corev1.DNSClusterFirst, true, nil, base,
			`{"servers":["192.168.1.1","192.168.1.2"],"searches":["corp.example","home"],"options":["timeout:3","ndots:2"]}`, nil},
		{"ClusterFirstWithHostNet", corev1.DNSClusterFirstWithHostNet, true, nil, base,
			`{"servers":["10.96.0.10"],"searches":["ns.svc.cluster.local","svc.cluster.local","cluster.local","corp.example","home"],"options":["ndots:5"]}`, nil},
		{"Default", corev1.DNSDefault, false, nil, base,
			`{"servers":["192.168.1.1","192.168.1.2"],"searches":["corp.example","home"],"options":["timeout:3","ndots:2"]}`, nil},
		{"None with dnsConfig", corev1.DNSNone, false, &corev1.PodDNSConfig{
			Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptrTo("1")}, {Name: "edns0"}},
		}, base, `{"servers":["1.1.1.1"],"searches":["a.example"],"options":["ndots:1","edns0"]}`, nil},
		{"ClusterFirst merged with dnsConfig", corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{
			Nameservers: []string{"10.96.0.10", "8.8.8.8"}, Searches: []string{"svc.cluster.local", "extra"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptrTo("2")}},
		}, base, `{"servers":["10.96.0.10","8.8.8.8"],"searches":["ns.svc.cluster.local","svc.cluster.local","cluster.local","corp.example","home","extra"],"options":["ndots:2"]}`, nil},
		{"too many nameservers", corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}}, base,
			`{"servers":["1.1.1.1","2.2.2.2","3.3.3.3"]}`, []string{"DNSConfigForming"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(ctr("a", nil, nil))
			pod.Spec.DNSPolicy = tc.policy
			pod.Spec.HostNetwork = tc.hostNet
			pod.Spec.DNSConfig = tc.dnsConfig
			sb, warnings, err := SandboxConfig(pod, 0, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "dns_config", jsonOf(t, sb.DnsConfig), tc.want)
			var reasons []string
			for _, w := range warnings {
				reasons = append(reasons, w.Reason)
			}
			eq(t, "warnings", reasons, tc.wantWarnings)
			if tc.hostNet {
				eq(t, "hostname on host network", sb.Hostname, "")
				eq(t, "network namespace", sb.Linux.SecurityContext.NamespaceOptions.Network, runtimeapi.NamespaceMode_NODE)
			}
		})
	}
	pod := podWith(ctr("a", nil, nil))
	_, warnings, _ := SandboxConfig(pod, 0, noDNS)
	eq(t, "MissingClusterDNS message", warnings[0].Message,
		`pod: "p_ns(1234-abcd)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`)
	if _, _, err := SandboxConfig(pod, 0, Options{ResolvConf: "/nonexistent/resolv.conf"}); err == nil {
		t.Error("missing resolv.conf: want an error, as the kubelet's GetPodDNS")
	}
}

func TestHostname(t *testing.T) {
	o := Options{ResolvConf: writeResolvConf(t, ""), ClusterDomain: "cluster.local"}
	long := strings.Repeat("a", 62) + "-b"
	for _, tc := range []struct {
		name, hostname, subdomain string
		fqdn                      bool
		want                      string
	}{
		{"p", "", "", false, "p"},
		{"p", "web-0", "", false, "web-0"},
		{long, "", "", false, strings.Repeat("a", 62)}, // truncated to 63, trailing '-' trimmed
		{"p", "web-0", "svc", true, "web-0.svc.ns.svc.cluster.local"},
		{"p", "web-0", "svc", false, "web-0"},
	} {
		pod := podWith(ctr("a", nil, nil))
		pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain = tc.name, tc.hostname, tc.subdomain
		pod.Spec.SetHostnameAsFQDN = ptrTo(tc.fqdn)
		sb, _, err := SandboxConfig(pod, 0, o)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "hostname", sb.Hostname, tc.want)
	}
}

func TestSecurityContexts(t *testing.T) {
	o := Options{RootDir: "/var/lib/kubelet", ResolvConf: writeResolvConf(t, "")}
	c := ctr("a", nil, nil)
	c.SecurityContext = &corev1.SecurityContext{
		Privileged:               ptrTo(true),
		RunAsUser:                ptrTo(int64(1000)),
		ReadOnlyRootFilesystem:   ptrTo(true),
		AllowPrivilegeEscalation: ptrTo(false),
		Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptrTo("my.json")},
	}
	pod := podWith(c, ctr("b", nil, nil))
	pod.Spec.HostPID = true
	pod.Spec.HostIPC = true
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptrTo(int64(2000)), RunAsGroup: ptrTo(int64(3000)), FSGroup: ptrTo(int64(4000)),
		SupplementalGroups: []int64{5000}, Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	sb, _, err := SandboxConfig(pod, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "sandbox security_context", jsonOf(t, sb.Linux.SecurityContext),
		`{"namespace_options":{"pid":"NODE","ipc":"NODE","userns_options":{"mode":"NODE"}},"run_as_user":{"value":"2000"},"run_as_group":{"value":"3000"},"supplemental_groups":["4000","5000"],"privileged":true,"seccomp":{}}`)
	eq(t, "sysctls", sb.Linux.Sysctls, map[string]string{"net.core.somaxconn": "1024"})

	ca, err := ContainerConfig(pod, sb, ContainerInput{Container: &pod.Spec.Containers[0], ImageUser: "nobody"}, o)
	if err != nil {
		t.Fatal(err)
	}
	sc := ca.Linux.SecurityContext
	eq(t, "capabilities", jsonOf(t, sc.Capabilities), `{"add_capabilities":["NET_ADMIN"],"drop_capabilities":["ALL"]}`)
	eq(t, "privileged", sc.Privileged, true)
	eq(t, "run_as_user (container wins)", sc.RunAsUser.GetValue(), int64(1000))
	eq(t, "run_as_username (not set when run_as_user is)", sc.RunAsUsername, "")
	eq(t, "run_as_group (from pod)", sc.RunAsGroup.GetValue(), int64(3000))
	eq(t, "readonly_rootfs", sc.ReadonlyRootfs, true)
	eq(t, "no_new_privs", sc.NoNewPrivs, true)
	eq(t, "supplemental_groups", sc.SupplementalGroups, []int64{4000, 5000})
	eq(t, "seccomp", jsonOf(t, sc.Seccomp), `{"profile_type":"Localhost","localhost_ref":"/var/lib/kubelet/seccomp/my.json"}`)
	eq(t, "masked paths kept for privileged (as the kubelet sends them)", len(sc.MaskedPaths), 12)

	cb, err := ContainerConfig(pod, sb, ContainerInput{Container: &pod.Spec.Containers[1], ImageUser: "nobody"}, o)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "pod seccomp", jsonOf(t, cb.Linux.SecurityContext.Seccomp), `{}`) // RuntimeDefault
	eq(t, "pod run_as_user", cb.Linux.SecurityContext.RunAsUser.GetValue(), int64(2000))

	// Image user when nothing is set: numeric → run_as_user, name → run_as_username.
	plain := podWith(ctr("a", nil, nil))
	for user, want := range map[string]string{"": `{}`, "1001": `{"value":"1001"}`} {
		cfg, err := ContainerConfig(plain, nil, ContainerInput{Container: &plain.Spec.Containers[0], ImageUser: user}, o)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "run_as_user for image user "+user, jsonOf(t, cfg.Linux.SecurityContext.RunAsUser), want)
	}
	cfg, _ := ContainerConfig(plain, nil, ContainerInput{Container: &plain.Spec.Containers[0], ImageUser: "www-data"}, o)
	eq(t, "run_as_username", cfg.Linux.SecurityContext.RunAsUsername, "www-data")
	eq(t, "no run_as_user for a named user", cfg.Linux.SecurityContext.RunAsUser == nil, true)

	um := corev1.UnmaskedProcMount
	plain.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: &um}
	cfg, _ = ContainerConfig(plain, nil, ContainerInput{Container: &plain.Spec.Containers[0]}, o)
	eq(t, "unmasked", len(cfg.Linux.SecurityContext.MaskedPaths)+len(cfg.Linux.SecurityContext.ReadonlyPaths), 0)

	share := podWith(ctr("a", nil, nil))
	share.Spec.ShareProcessNamespace = ptrTo(true)
	ns, _ := namespaceOptions(share, Options{})
	eq(t, "shareProcessNamespace", ns.Pid, runtimeapi.NamespaceMode_POD)
}

func TestMountsAndAnnotations(t *testing.T) {
	bidir := corev1.MountPropagationBidirectional
	h2c := corev1.MountPropagationHostToContainer
	c := ctr("app", nil, nil)
	c.Env = []corev1.EnvVar{{Name: "SUB", Value: "dir"}}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true, SubPath: "app.conf", MountPropagation: &h2c},
		{Name: "data", MountPath: "/logs", SubPathExpr: "$(SUB)/logs", MountPropagation: &bidir},
	}
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}}
	c.TTY, c.Stdin = true, true
	c.WorkingDir = "/work"
	pod := podWith(c)
	pod.DeletionGracePeriodSeconds = ptrTo(int64(10))
	in := ContainerInput{
		Container: &pod.Spec.Containers[0], RestartCount: 3,
		VolumeHostPaths:    map[string]string{"data": "/vol/data", "cfg": "/vol/cfg"},
		PodIPs:             []string{"10.0.0.1"},
		EtcHostsPath:       "/root/pods/uid/etc-hosts",
		TerminationLogPath: "/root/pods/uid/containers/app/abcdef01",
	}
	cfg, err := ContainerConfig(pod, nil, in, Options{ExtraLabels: map[string]string{"podstep.dev/managed": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range cfg.Mounts {
		got = append(got, jsonOf(t, m))
	}
	eq(t, "mounts", got, []string{
		`{"container_path":"/data","host_path":"/vol/data"}`,
		`{"container_path":"/etc/cfg","host_path":"/vol/cfg/app.conf","readonly":true,"propagation":"PROPAGATION_HOST_TO_CONTAINER"}`,
		`{"container_path":"/logs","host_path":"/vol/data/dir/logs","propagation":"PROPAGATION_BIDIRECTIONAL"}`,
		`{"container_path":"/etc/hosts","host_path":"/root/pods/uid/etc-hosts"}`,
		`{"container_path":"/dev/termination-log","host_path":"/root/pods/uid/containers/app/abcdef01"}`,
	})
	eq(t, "log_path", cfg.LogPath, "app/3.log")
	eq(t, "attempt", cfg.Metadata.Attempt, uint32(3))
	eq(t, "restartCount", cfg.Annotations["io.kubernetes.container.restartCount"], "3")
	eq(t, "preStop", cfg.Annotations["io.kubernetes.container.preStopHandler"], `{"exec":{"command":["sleep","5"]}}`)
	eq(t, "deletionGracePeriod", cfg.Annotations["io.kubernetes.pod.deletionGracePeriod"], "10")
	eq(t, "tty/stdin/workdir", []any{cfg.Tty, cfg.Stdin, cfg.StdinOnce, cfg.WorkingDir}, []any{true, true, false, "/work"})
	eq(t, "extra label", cfg.Labels["podstep.dev/managed"], "true")
	eq(t, "no pod labels on containers", len(cfg.Labels), 5)

	// No pod IP → no /etc/hosts (kubelet: mountEtcHostsFile needs podIPs); a
	// user mount at /etc/hosts also suppresses it; missing volume → ConfigError.
	in.PodIPs = nil
	cfg, _ = ContainerConfig(pod, nil, in, Options{})
	for _, m := range cfg.Mounts {
		if m.ContainerPath == "/etc/hosts" {
			t.Error("/etc/hosts mounted without pod IPs")
		}
	}
	in.VolumeHostPaths = map[string]string{"data": "/vol/data"}
	if _, err := ContainerConfig(pod, nil, in, Options{}); err == nil {
		t.Error("missing volume: want an error")
	}
}

func TestSandboxLabelsAndLogDir(t *testing.T) {
	pod := podWith(ctr("a", nil, nil))
	pod.Labels = map[string]string{"app": "x", "io.kubernetes.pod.name": "spoofed"}
	pod.Annotations = map[string]string{"note": "n"}
	o := Options{LogDir: "/logs", ResolvConf: writeResolvConf(t, ""), ExtraLabels: map[string]string{"podstep.dev/managed": "true"}}
	sb, _, err := SandboxConfig(pod, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "labels", sb.Labels, map[string]string{"app": "x", "podstep.dev/managed": "true",
		"io.kubernetes.pod.name": "p", "io.kubernetes.pod.namespace": "ns", "io.kubernetes.pod.uid": "1234-abcd"})
	eq(t, "annotation kept", sb.Annotations["note"], "n")
	eq(t, "log dir", SandboxLogDir(pod, o), "/logs/ns_p_1234-abcd")
	eq(t, "log_directory", sb.LogDirectory, "/logs/ns_p_1234-abcd")
}

// TestPodAnnotationsBySource: a pod from the API server (run --pod) carries
// config.source "api" and no config.hash, as the kubelet's API server
// source gives it; a manifest's is a static pod's, file with the hash.
func TestPodAnnotationsBySource(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1", Annotations: map[string]string{"a": "b"}}}
	seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		source string
		want   map[string]string
	}{
		{"", map[string]string{"a": "b", AnnotationConfigSeen: "2026-01-02T03:04:05Z", AnnotationConfigSource: "file", AnnotationConfigHash: "u1"}},
		{SourceFile, map[string]string{"a": "b", AnnotationConfigSeen: "2026-01-02T03:04:05Z", AnnotationConfigSource: "file", AnnotationConfigHash: "u1"}},
		{SourceAPI, map[string]string{"a": "b", AnnotationConfigSeen: "2026-01-02T03:04:05Z", AnnotationConfigSource: "api"}},
	} {
		if got := PodAnnotations(pod, Options{Seen: seen, Source: tc.source}); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("source %q: %v, want %v", tc.source, got, tc.want)
		}
	}
}
