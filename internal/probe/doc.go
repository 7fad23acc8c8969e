// Package probe runs the kubelet's probe and lifecycle-handler actions the
// way the kubelet (v1.33) runs them: httpGet, tcpSocket, grpc and exec probes for
// startup, readiness and liveness, and the exec, httpGet and sleep actions of
// postStart/preStop hooks.
//
// It is podstep's own implementation; what carries over from the kubelet are
// the facts (how a request is built, which status codes pass, the exact text
// of outputs, errors and events, the timing defaults), each cited in the doc
// comment of the function that reproduces it. The kubelet files are those of
// k8s.io/kubernetes v1.33.4:
//
//   - pkg/probe/http/request.go   NewRequestForHTTPGetAction (request building)
//   - pkg/probe/http/http.go      DoHTTPProbe, RedirectChecker (HTTP probe)
//   - pkg/probe/tcp/tcp.go        DoTCPProbe
//   - pkg/probe/grpc/grpc.go      grpcProber.Probe (health Check, its texts)
//   - pkg/probe/exec/exec.go      exec probe result mapping
//   - pkg/probe/util.go           ResolveContainerPort
//   - pkg/probe/dialer_others.go  ProbeDialer (SO_LINGER 1s)
//   - pkg/kubelet/prober/prober.go   event texts, retries, Warning handling
//   - pkg/kubelet/prober/worker.go   scheduling and thresholds
//   - pkg/kubelet/lifecycle/handlers.go  lifecycle hook runner
//   - pkg/kubelet/kubelet.go      the lifecycle HTTP client
//   - staging/src/k8s.io/cri-client/pkg/remote_runtime.go  ExecSync errors
//
// A probe action (HTTPGet, TCPSocket, GRPC, Exec) is one attempt and returns a
// Result; EventMessage and EventReason turn a Result into the Unhealthy or
// ProbeWarning event the kubelet records, Retry reproduces the kubelet's
// retries of errored attempts, and Tracker reproduces the worker's
// success/failure thresholds. Hook actions (HookHTTPGet, HookExec, HookSleep)
// return a HookResult whose Message is the text the kubelet's handler runner
// returns on failure.
package probe
