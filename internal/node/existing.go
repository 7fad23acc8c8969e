package node

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExistingPodsAnnotation, on a Node document, lists pods already running on
// the node, one per line (podstep's own notation; a real Node never has it):
//
//	NAME [RESOURCE=QUANTITY]... [hostPort=[IP:]PORT[/PROTOCOL]]...
//
// for example
//
//	podstep.dev/existing-pods: |
//	  web-0 cpu=500m memory=256Mi hostPort=8080
//	  dns hostPort=10.0.0.1:53/UDP
//
// Their requests count as used, their host ports as taken, and each counts
// against the node's pods.
const ExistingPodsAnnotation = "podstep.dev/existing-pods"

// ParseExisting parses the [ExistingPodsAnnotation] notation into pods with
// one container carrying the requests and host ports.
func ParseExisting(s string) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	for i, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: f[0], Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}},
			}}},
		}
		c := &p.Spec.Containers[0]
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || v == "" {
				return nil, fmt.Errorf("line %d: %q: expected RESOURCE=QUANTITY or hostPort=[IP:]PORT[/PROTOCOL]", i+1, kv)
			}
			if k == "hostPort" {
				port, err := parseHostPort(v)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", i+1, err)
				}
				c.Ports = append(c.Ports, port)
				continue
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s=%q: not a quantity (e.g. 500m, 256Mi)", i+1, k, v)
			}
			c.Resources.Requests[corev1.ResourceName(k)] = q
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// parseHostPort parses [IP:]PORT[/PROTOCOL].
func parseHostPort(v string) (corev1.ContainerPort, error) {
	p := corev1.ContainerPort{Protocol: corev1.ProtocolTCP}
	rest := v
	if before, proto, ok := strings.Cut(rest, "/"); ok {
		switch strings.ToUpper(proto) {
		case "TCP", "UDP", "SCTP":
			p.Protocol = corev1.Protocol(strings.ToUpper(proto))
		default:
			return p, fmt.Errorf("hostPort=%q: protocol %q; expected TCP, UDP or SCTP", v, proto)
		}
		rest = before
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		p.HostIP, rest = rest[:i], rest[i+1:]
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || n > 65535 {
		return p, fmt.Errorf("hostPort=%q: port %q; expected a number from 1 to 65535", v, rest)
	}
	p.HostPort, p.ContainerPort = int32(n), int32(n)
	return p, nil
}
