package manifest

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The rules below are the API server's, from
// pkg/apis/core/validation/validation.go (validateProbe, validateLifecycle,
// validateHandler and the actions); the messages quote its wording. A named
// port is checked for its form only, as the API server does: a name that no
// port of the container has is the kubelet's to fail on, at run time.

// handler is one probe or lifecycle hook action (the API server's
// commonHandler).
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

const (
	probeActions = "exec, httpGet, tcpSocket or grpc"
	hookActions  = "exec, httpGet, tcpSocket or sleep"
)

// validateHandlers checks the probes and lifecycle hooks of the containers
// and sidecar init containers of s; validateContainer has already refused
// them on regular init containers.
func validateHandlers(s *corev1.PodSpec) *fieldErr {
	grace := s.TerminationGracePeriodSeconds
	for _, list := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i := range list.cs {
			c := &list.cs[i]
			f := fmt.Sprintf("spec.%s[%d]", list.name, i)
			if l := c.Lifecycle; l != nil {
				for _, h := range []struct {
					name string
					h    *corev1.LifecycleHandler
				}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
					if h.h == nil {
						continue
					}
					hh := handler{exec: h.h.Exec, httpGet: h.h.HTTPGet, tcpSocket: h.h.TCPSocket, sleep: h.h.Sleep}
					if e := validateHandler(hh, f+".lifecycle."+h.name, hookActions, grace); e != nil {
						return e
					}
				}
			}
			for _, p := range []struct {
				name string
				p    *corev1.Probe
			}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
				if p.p == nil {
					continue
				}
				if e := validateProbe(p.p, f+"."+p.name, p.name, grace); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// validateProbe mirrors validateProbe and, by kind, validateLivenessProbe,
// validateReadinessProbe and validateStartupProbe.
func validateProbe(p *corev1.Probe, f, kind string, grace *int64) *fieldErr {
	h := handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}
	if e := validateHandler(h, f, probeActions, grace); e != nil {
		return e
	}
	for _, n := range []struct {
		name string
		v    int32
	}{{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds}, {"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold}} {
		if n.v < 0 {
			return fe(f+"."+n.name, "invalid value %d: must be greater than or equal to 0", n.v)
		}
	}
	if g := p.TerminationGracePeriodSeconds; g != nil {
		if kind == "readinessProbe" {
			return fe(f+".terminationGracePeriodSeconds", "invalid value %d: must not be set for readinessProbes", *g)
		}
		if *g <= 0 {
			return fe(f+".terminationGracePeriodSeconds", "invalid value %d: must be greater than 0", *g)
		}
	}
	if kind != "readinessProbe" && p.SuccessThreshold != 1 {
		return fe(f+".successThreshold", "invalid value %d: must be 1 (a %s succeeds on its first success)", p.SuccessThreshold, kind)
	}
	return nil
}

// validateHandler mirrors validateHandler: exactly one action, and that
// action valid. actions lists the actions allowed at f.
func validateHandler(h handler, f, actions string, grace *int64) *fieldErr {
	set := ""
	for _, a := range []struct {
		name string
		set  bool
	}{{"exec", h.exec != nil}, {"httpGet", h.httpGet != nil}, {"tcpSocket", h.tcpSocket != nil}, {"grpc", h.grpc != nil}, {"sleep", h.sleep != nil}} {
		if !a.set {
			continue
		}
		if set != "" {
			return fe(f+"."+a.name, "may not specify more than 1 handler type (%s is set too); expected exactly one of %s", set, actions)
		}
		set = a.name
	}
	switch {
	case set == "":
		return fe(f, "must specify a handler type; expected exactly one of %s", actions)
	case h.exec != nil:
		if len(h.exec.Command) == 0 {
			return fe(f+".exec.command", `required value; expected a command such as ["cat", "/tmp/healthy"]`)
		}
	case h.httpGet != nil:
		g := h.httpGet
		if g.Path == "" {
			return fe(f+".httpGet.path", `required value; expected a URL path such as "/healthz"`)
		}
		if e := validatePortNumOrName(g.Port, f+".httpGet.port"); e != nil {
			return e
		}
		if e := oneOf(f+".httpGet.scheme", g.Scheme, corev1.URISchemeHTTP, corev1.URISchemeHTTPS); e != nil {
			return e
		}
		for j, hd := range g.HTTPHeaders {
			if msgs := validation.IsHTTPHeaderName(hd.Name); len(msgs) > 0 {
				return fe(fmt.Sprintf("%s.httpGet.httpHeaders[%d].name", f, j), "invalid value %q: %s", hd.Name, strings.Join(msgs, ", "))
			}
		}
		if pr := g.Protocol; pr != nil {
			if e := oneOf(f+".httpGet.protocol", *pr, corev1.HTTPProtocolHTTP1, corev1.HTTPProtocolHTTP2); e != nil {
				return e
			}
		}
	case h.tcpSocket != nil:
		return validatePortNumOrName(h.tcpSocket.Port, f+".tcpSocket.port")
	case h.grpc != nil:
		if e := validatePortNumOrName(intstr.FromInt32(h.grpc.Port), f+".grpc.port"); e != nil {
			return e
		}
		if m := h.grpc.Mode; m != nil {
			return oneOf(f+".grpc.mode", *m, corev1.GRPCProbeModePlaintext, corev1.GRPCProbeModeTLS)
		}
	case h.sleep != nil:
		// validateSleepAction
		if s := h.sleep.Seconds; grace != nil && (s < 0 || s > *grace) {
			return fe(f+".sleep.seconds", "invalid value %d: must be non-negative and less than terminationGracePeriodSeconds (%d)", s, *grace)
		}
	}
	return nil
}

// validatePortNumOrName mirrors ValidatePortNumOrName: a number between 1
// and 65535, or an IANA service name such as "http".
func validatePortNumOrName(p intstr.IntOrString, f string) *fieldErr {
	if p.Type == intstr.String {
		if msgs := validation.IsValidPortName(p.StrVal); len(msgs) > 0 {
			return fe(f, "invalid value %q: %s; expected a port number or the name of a container port: at most 15 lowercase letters, digits and '-', with at least one letter, such as \"http\"", p.StrVal, strings.Join(msgs, ", "))
		}
		return nil
	}
	if msgs := validation.IsValidPortNum(int(p.IntVal)); len(msgs) > 0 {
		return fe(f, "invalid value %d: %s; expected a port number or the name of a container port, such as 8080 or \"http\"", p.IntVal, strings.Join(msgs, ", "))
	}
	return nil
}
