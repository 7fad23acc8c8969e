package probe

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolvePort turns a probe's or handler's port into a number, with the rules
// and error texts of the kubelet's probe.ResolveContainerPort
// (pkg/probe/util.go), which both probes and lifecycle hooks use in 1.33:
//
//   - an int is taken as is;
//   - a string is looked up among container.Ports by name; when no port has
//     that name the string is parsed as a number, and when that fails too the
//     error is strconv's (e.g. `strconv.Atoi: parsing "web": invalid
//     syntax`): the kubelet never says "port not found";
//   - the result must be in 1..65535, else "invalid port number: N".
func ResolvePort(port intstr.IntOrString, container *corev1.Container) (int, error) {
	var n int
	switch port.Type {
	case intstr.Int:
		n = int(port.IntVal)
	case intstr.String:
		found := false
		if container != nil {
			for _, p := range container.Ports {
				if p.Name == port.StrVal {
					n, found = int(p.ContainerPort), true
					break
				}
			}
		}
		if !found {
			v, err := strconv.Atoi(port.StrVal)
			if err != nil {
				return v, err
			}
			n = v
		}
	default:
		return -1, fmt.Errorf("intOrString had no kind: %+v", port)
	}
	if n <= 0 || n >= 65536 {
		return n, fmt.Errorf("invalid port number: %v", n)
	}
	return n, nil
}
