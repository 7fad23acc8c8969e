package podcfg

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// masterServices are the Services of namespace default whose variables
// every pod gets (masterServices in pkg/kubelet/kubelet_pods.go).
var masterServices = map[string]bool{"kubernetes": true}

// serviceEnv mirrors getServiceEnvVarMap (pkg/kubelet/kubelet_pods.go):
// of the Services the kubelet's lister has, those with a cluster IP (not
// "None", not empty), the master Services of namespace default always,
// and the pod's namespace's when enableServiceLinks is true (one of the
// namespace's own, of the same name, wins over a master Service), each
// made into variables by envvars.FromServices (pkg/kubelet/envvars). The
// kubelet keeps them in a map (random order); podstep lists them by
// Service name, each Service's in FromServices's order. nil services (no
// API server) give none, as a kubelet without a service lister.
func serviceEnv(ns string, enableServiceLinks bool, services []*corev1.Service) []envVar {
	var out []envVar
	for _, s := range pickServices(ns, enableServiceLinks, services) {
		out = append(out, fromService(s)...)
	}
	return out
}

// ServiceEnvSources names the Services (namespace/name) whose variables
// the pod's containers get, in the order they are sent; none without
// Services (no API server).
func ServiceEnvSources(pod *corev1.Pod, services []*corev1.Service) []string {
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	var out []string
	for _, s := range pickServices(pod.Namespace, links, services) {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	return out
}

// pickServices is getServiceEnvVarMap's choice of Services, sorted by name.
func pickServices(ns string, enableServiceLinks bool, services []*corev1.Service) []*corev1.Service {
	picked := map[string]*corev1.Service{}
	for _, s := range services {
		if s.Spec.ClusterIP == corev1.ClusterIPNone || s.Spec.ClusterIP == "" || len(s.Spec.Ports) == 0 {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && masterServices[s.Name]:
			if _, ok := picked[s.Name]; !ok {
				picked[s.Name] = s
			}
		case s.Namespace == ns && enableServiceLinks:
			picked[s.Name] = s
		}
	}
	names := make([]string, 0, len(picked))
	for n := range picked {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*corev1.Service, 0, len(names))
	for _, n := range names {
		out = append(out, picked[n])
	}
	return out
}

// fromService mirrors envvars.FromServices for one Service: NAME_SERVICE_HOST,
// NAME_SERVICE_PORT (the first port), NAME_SERVICE_PORT_<PORT NAME> for
// each named port, then the Docker link variables (makeLinkVariables):
// NAME_PORT (the first port) and, per port, NAME_PORT_<port>_<PROTO>
// with _PROTO, _PORT and _ADDR.
func fromService(s *corev1.Service) []envVar {
	prefix := envVarName(s.Name)
	ip := s.Spec.ClusterIP
	out := []envVar{
		{name: prefix + "_SERVICE_HOST", value: ip},
		{name: prefix + "_SERVICE_PORT", value: strconv.Itoa(int(s.Spec.Ports[0].Port))},
	}
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, envVar{name: prefix + "_SERVICE_PORT_" + envVarName(p.Name), value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := string(corev1.ProtocolTCP)
		if p.Protocol != "" {
			proto = string(p.Protocol)
		}
		lower := strings.ToLower(proto)
		url := fmt.Sprintf("%s://%s", lower, net.JoinHostPort(ip, strconv.Itoa(int(p.Port))))
		if i == 0 {
			out = append(out, envVar{name: prefix + "_PORT", value: url})
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		out = append(out,
			envVar{name: pp, value: url},
			envVar{name: pp + "_PROTO", value: lower},
			envVar{name: pp + "_PORT", value: strconv.Itoa(int(p.Port))},
			envVar{name: pp + "_ADDR", value: ip})
	}
	return out
}

// envVarName is makeEnvVariableName: upper case, '-' as '_'.
func envVarName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
