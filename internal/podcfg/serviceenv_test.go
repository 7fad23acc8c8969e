package podcfg

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func port(name string, p int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: p, Protocol: proto}
}

// kubernetesVars are what every pod of a cluster whose kubernetes Service
// is 10.96.0.1:443 (port "https") gets.
var kubernetesVars = []string{
	"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443",
	"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP_PROTO=tcp", "KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
}

// TestServiceEnv: the variables getServiceEnvVarMap and envvars.FromServices
// give (pkg/kubelet/kubelet_pods.go, pkg/kubelet/envvars/envvars.go), after
// the container's own, which win; $(VAR) in env values and the command
// sees them.
func TestServiceEnv(t *testing.T) {
	master := svc("default", "kubernetes", "10.96.0.1", port("https", 443, corev1.ProtocolTCP))
	db := svc("ns", "web-db", "10.96.5.6", port("pg", 5432, ""), port("metrics", 9187, corev1.ProtocolTCP))
	dns := svc("ns", "dns", "fd00::a", port("", 53, corev1.ProtocolUDP))
	others := []*corev1.Service{
		svc("ns", "headless", corev1.ClusterIPNone, port("", 80, "")),
		svc("ns", "external", "", port("", 80, "")),
		svc("other", "elsewhere", "10.96.9.9", port("", 80, "")),
		svc("default", "not-master", "10.96.0.2", port("", 80, "")),
	}
	dbVars := []string{
		"WEB_DB_SERVICE_HOST=10.96.5.6", "WEB_DB_SERVICE_PORT=5432", "WEB_DB_SERVICE_PORT_PG=5432", "WEB_DB_SERVICE_PORT_METRICS=9187",
		"WEB_DB_PORT=tcp://10.96.5.6:5432",
		"WEB_DB_PORT_5432_TCP=tcp://10.96.5.6:5432", "WEB_DB_PORT_5432_TCP_PROTO=tcp", "WEB_DB_PORT_5432_TCP_PORT=5432", "WEB_DB_PORT_5432_TCP_ADDR=10.96.5.6",
		"WEB_DB_PORT_9187_TCP=tcp://10.96.5.6:9187", "WEB_DB_PORT_9187_TCP_PROTO=tcp", "WEB_DB_PORT_9187_TCP_PORT=9187", "WEB_DB_PORT_9187_TCP_ADDR=10.96.5.6",
	}
	dnsVars := []string{
		"DNS_SERVICE_HOST=fd00::a", "DNS_SERVICE_PORT=53", "DNS_PORT=udp://[fd00::a]:53",
		"DNS_PORT_53_UDP=udp://[fd00::a]:53", "DNS_PORT_53_UDP_PROTO=udp", "DNS_PORT_53_UDP_PORT=53", "DNS_PORT_53_UDP_ADDR=fd00::a",
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		links    bool
		services []*corev1.Service
		env      []corev1.EnvVar
		command  []string
		want     []string
		wantCmd  []string
	}{
		{name: "no API server: none", links: true, services: nil,
			env: []corev1.EnvVar{{Name: "A", Value: "1"}}, want: []string{"A=1"}},
		{name: "enableServiceLinks: the namespace's and kubernetes, by name", links: true, services: append([]*corev1.Service{db, master, dns}, others...),
			env: []corev1.EnvVar{{Name: "A", Value: "1"}}, want: cat([]string{"A=1"}, dnsVars, kubernetesVars, dbVars)},
		{name: "enableServiceLinks false: kubernetes only", links: false, services: append([]*corev1.Service{db, master, dns}, others...),
			want: kubernetesVars},
		{name: "the container's own win and keep their place; $(VAR) sees the services", links: true, services: []*corev1.Service{master, db},
			env: []corev1.EnvVar{
				{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"},
				{Name: "DB", Value: "$(WEB_DB_SERVICE_HOST):$(WEB_DB_SERVICE_PORT) $(KUBERNETES_SERVICE_HOST)"},
			},
			command: []string{"echo", "$(KUBERNETES_PORT_443_TCP_PORT)", "$(DB)"},
			want:    cat([]string{"KUBERNETES_SERVICE_HOST=mine", "DB=10.96.5.6:5432 mine"}, kubernetesVars[1:], dbVars),
			wantCmd: []string{"echo", "443", "10.96.5.6:5432 mine"}},
		{name: "a kubernetes Service of the namespace wins over default's", links: true,
			services: []*corev1.Service{svc("ns", "kubernetes", "10.0.0.7", port("", 8443, "")), master},
			want: []string{"KUBERNETES_SERVICE_HOST=10.0.0.7", "KUBERNETES_SERVICE_PORT=8443", "KUBERNETES_PORT=tcp://10.0.0.7:8443",
				"KUBERNETES_PORT_8443_TCP=tcp://10.0.0.7:8443", "KUBERNETES_PORT_8443_TCP_PROTO=tcp", "KUBERNETES_PORT_8443_TCP_PORT=8443", "KUBERNETES_PORT_8443_TCP_ADDR=10.0.0.7"}},
		{name: "a kubernetes Service of the namespace without links: default's", links: false,
			services: []*corev1.Service{svc("ns", "kubernetes", "10.0.0.7", port("", 8443, "")), master}, want: kubernetesVars},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &corev1.Container{Name: "app", Image: "busybox", Env: tc.env, Command: tc.command}
			pod := podWith(*c)
			pod.Spec.EnableServiceLinks = ptrTo(tc.links)
			o := Options{Node: testNode("node-1"), ResolvConf: writeResolvConf(t, "")}
			sb, _, err := SandboxConfig(pod, 0, o)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := ContainerConfig(pod, sb, envInput(&pod.Spec.Containers[0], fakeEnv{services: tc.services}), o)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "envs", envPairs(cfg), tc.want)
			if tc.wantCmd != nil {
				eq(t, "command", cfg.Command, tc.wantCmd)
			}
		})
	}
}
