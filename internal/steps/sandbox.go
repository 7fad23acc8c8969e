package steps

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/reason"
)

// runtimeStatusStep mirrors the kubelet's runtime health check: its sync
// loop only syncs pods while the runtime's last Status said RuntimeReady
// (and, for pods not on the host network, NetworkReady).
type runtimeStatusStep struct{}

func (runtimeStatusStep) mirrors() string {
	return "Kubelet.updateRuntimeUp / syncLoop runtimeState check (pkg/kubelet/kubelet.go); cgroup driver from RuntimeConfig (pkg/kubelet/kuberuntime/kuberuntime_manager.go)"
}

func (runtimeStatusStep) explain() string {
	return "The kubelet keeps asking the runtime for its Version and Status; it syncs no pod while RuntimeReady is false, and creates no pod sandbox needing a network while NetworkReady is false. It also asks the runtime which cgroup driver it uses (RuntimeConfig; older runtimes answer Unimplemented and the kubelet uses its own --cgroup-driver)."
}

func (runtimeStatusStep) requests(*Engine) []Request {
	return []Request{
		{Method: "Version", Message: &runtimeapi.VersionRequest{Version: "0.1.0"}},
		{Method: "Status", Message: &runtimeapi.StatusRequest{}},
		{Method: "RuntimeConfig", Message: &runtimeapi.RuntimeConfigRequest{}},
		{Method: "Status", Message: &runtimeapi.StatusRequest{Verbose: true}, Note: "podstep's own check, not the kubelet's, only if RuntimeConfig is Unimplemented: the runtime's cgroup driver from its config, against --cgroup-driver"},
		{Method: "ListPodSandbox", Message: &runtimeapi.ListPodSandboxRequest{}, Note: "podstep's own check, not the kubelet's: does a kubelet share this runtime?"},
	}
}

func (runtimeStatusStep) run(ctx context.Context, e *Engine) Result {
	v, err := e.client.Version(ctx)
	if err != nil {
		return fail(reason.RuntimeUnavailable, err, "the runtime does not answer Version")
	}
	e.rt.runtimeName = v.RuntimeName + " " + v.RuntimeVersion
	st, err := e.client.Status(ctx, false)
	if err != nil {
		return fail(reason.RuntimeUnavailable, err, "the runtime does not answer Status")
	}
	details := []Detail{kv("runtime", fmt.Sprintf("%s %s (CRI %s)", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion))}
	var conds []string
	runtimeReady := false
	var netCond *runtimeapi.RuntimeCondition
	for _, c := range st.GetStatus().GetConditions() {
		conds = append(conds, fmt.Sprintf("%s=%t", c.Type, c.Status))
		switch c.Type {
		case runtimeapi.RuntimeReady:
			runtimeReady = c.Status
		case runtimeapi.NetworkReady:
			e.rt.networkReady = c.Status
			netCond = c
		}
	}
	details = append(details, kv("conditions", strings.Join(conds, ", ")))
	e.rt.handlerUserns = map[string]bool{}
	for _, h := range st.RuntimeHandlers {
		e.rt.handlers = append(e.rt.handlers, h.Name)
		e.rt.handlerUserns[h.Name] = h.GetFeatures().GetUserNamespaces()
	}
	e.rt.statusSeen = true
	details = append(details, usernsSupportDetails(e)...)
	var warnings []string
	if h := e.runtimeHandler(); h != "" && len(e.rt.handlers) > 0 && !slices.Contains(e.rt.handlers, h) {
		warnings = append(warnings, fmt.Sprintf("runtime handler %q (from runtimeClassName) is not among the handlers the runtime reports (%s): RunPodSandbox will likely fail", h, strings.Join(quoteAll(e.rt.handlers), ", ")))
	}
	if !runtimeReady {
		err := fmt.Errorf("container runtime is down: RuntimeReady=false")
		return fail(reason.RuntimeNotReady, err, "the runtime is not ready")
	}
	hostNet := e.pod.Spec.HostNetwork
	if !e.rt.networkReady && !hostNet {
		// The kubelet's words (updateRuntimeUp, pkg/kubelet/kubelet.go, with
		// RuntimeCondition.String): the runtime's reason and message say why.
		err := fmt.Errorf("container runtime network not ready: NetworkReady=false reason:%s message:%s", netCond.GetReason(), netCond.GetMessage())
		return fail(reason.NetworkNotReady, err, "the runtime's network is not ready")
	}
	// Cgroup driver: the runtime's, else the configured one (cgroupdriver.go).
	cgDetails, cgWarnings, refusal := e.cgroupDriver(ctx)
	if refusal != nil {
		refusal.Details = append(details, refusal.Details...)
		refusal.Warnings = append(warnings, refusal.Warnings...)
		return *refusal
	}
	details = append(details, cgDetails...)
	warnings = append(warnings, cgWarnings...)
	r := ok(fmt.Sprintf("%s %s ready", v.RuntimeName, v.RuntimeVersion), details...)
	r.Warnings = warnings
	// podstep's own check: a kubelet on this runtime garbage-collects pods it
	// does not know, podstep's included.
	if list, err := e.client.ListPodSandbox(ctx, nil); err == nil {
		foreign := 0
		for _, sb := range list.Items {
			if sb.Labels[mark.ManagedLabel] != "true" && sb.Labels["io.kubernetes.pod.uid"] != "" {
				foreign++
			}
		}
		for _, sb := range list.Items {
			if sb.Labels[mark.ManagedLabel] == "true" && sb.GetMetadata().GetUid() == string(e.pod.UID) {
				msg := fmt.Sprintf("pod %s/%s (uid %s) already has sandbox %s (%s) on this runtime, %s",
					e.pod.Namespace, e.pod.Name, e.pod.UID, shortID(sb.Id), sb.State, sandboxHolder(sb.Annotations[mark.RootDirAnnotation], string(e.pod.UID), e.ownPodDir()))
				r := fail(reason.PodAlreadyExists, fmt.Errorf("%s", msg), "the pod already exists on this runtime")
				r.Details = details
				return r
			}
		}
		if foreign > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("a kubelet shares this runtime (%d of its pod sandboxes found): it may garbage-collect podstep's pod at any time", foreign))
		}
	}
	return r
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func unwrapMsg(err error) string {
	return strings.TrimSpace(fmt.Sprint(unwrapCRIMessage(err)))
}

// runSandboxStep mirrors kubeGenericRuntimeManager.createPodSandbox
// (pkg/kubelet/kuberuntime/kuberuntime_sandbox.go), SyncPod's step 4.
type runSandboxStep struct{}

func (runSandboxStep) mirrors() string {
	return "kubeGenericRuntimeManager.SyncPod step 4 → createPodSandbox → generatePodSandboxConfig (pkg/kubelet/kuberuntime/kuberuntime_sandbox.go)"
}

func (runSandboxStep) explain() string {
	return "The kubelet builds the PodSandboxConfig (metadata, hostname, log directory, DNS, port mappings, labels, cgroup parent, namespaces), makes the pod's log directory, and asks the runtime to run the sandbox: the runtime starts the pause container and sets up the pod's network namespace through CNI."
}

func (runSandboxStep) requests(e *Engine) []Request {
	cfg, _, err := e.sandboxConfig()
	if err != nil {
		return nil
	}
	return []Request{{Method: "RunPodSandbox", Message: &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: e.runtimeHandler()}}}
}

// sandboxConfig builds (once) the PodSandboxConfig.
// sandboxConfig returns the PodSandboxConfig: the one sent, once the
// sandbox exists; before that, the planned one, built once (it reads the
// host's resolv.conf) and again only when the runtime's cgroup driver,
// learned in runtime-status, changes the cgroup parent.
func (e *Engine) sandboxConfig() (*runtimeapi.PodSandboxConfig, []podcfg.Warning, error) {
	if e.rt.sandboxConfig != nil {
		return e.rt.sandboxConfig, nil, nil
	}
	userns, err := e.podUserNamespace()
	if err != nil {
		return nil, nil, err
	}
	e.opts.Config.UserNamespace = userns
	if p := e.rt.planned; p != nil && p.driver == e.opts.Config.CgroupDriver {
		return p.cfg, p.warns, nil
	}
	cfg, warns, err := podcfg.SandboxConfig(e.pod, 0, e.opts.Config)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	cfg.Annotations[mark.RootDirAnnotation] = e.opts.Config.RootDir
	cfg.Annotations[mark.LogDirAnnotation] = cfg.LogDirectory
	e.rt.planned = &plannedSandbox{driver: e.opts.Config.CgroupDriver, cfg: cfg, warns: warns}
	return cfg, warns, nil
}

// runtimeHandler is the CRI handler for the pod. With no API server there
// are no RuntimeClass objects, so podstep takes runtimeClassName as the
// handler name (a RuntimeClass's usual handler); a kubelet resolves the
// RuntimeClass object first (RuntimeClassManager.LookupRuntimeHandler).
func (e *Engine) runtimeHandler() string {
	if e.pod.Spec.RuntimeClassName != nil {
		return *e.pod.Spec.RuntimeClassName
	}
	return ""
}

func (runSandboxStep) run(ctx context.Context, e *Engine) Result {
	cfg, warns, err := e.sandboxConfig()
	if err != nil {
		// createPodSandbox returns the error; SyncPod records it as it
		// records a refused RunPodSandbox.
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedCreatePodSandBox, "", "Failed to create pod sandbox: "+err.Error())
		return fail(reason.ErrCreatePodSandbox, err, "cannot build the sandbox config")
	}
	var warnings []string
	for _, w := range warns {
		warnings = append(warnings, w.Reason+": "+w.Message)
		e.tracker.Record(corev1.EventTypeWarning, w.Reason, "", w.Message)
	}
	usernsDetails, err := e.writeUserNamespace()
	if err != nil {
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedCreatePodSandBox, "", "Failed to create pod sandbox: "+err.Error())
		return fail(reason.ErrCreatePodSandbox, err, "cannot record the pod's user namespace")
	}
	if cfg.LogDirectory != "" {
		if err := e.makeLogDir(cfg.LogDirectory); err != nil {
			e.tracker.Record(corev1.EventTypeWarning, reason.FailedCreatePodSandBox, "", "Failed to create pod sandbox: "+err.Error())
			return fail(reason.ErrCreatePodSandbox, err, "cannot make the pod log directory")
		}
	}
	// The kubelet never abandons a RunPodSandbox: a runtime keeps creating
	// the sandbox after a cancelled call, and it could not be torn down
	// without its ID. So on Ctrl-C or esc podstep waits for the answer.
	resp, err := e.client.RunPodSandbox(context.WithoutCancel(ctx), &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: e.runtimeHandler()})
	if err == nil && ctx.Err() != nil {
		e.mu.Lock()
		e.rt.sandboxConfig = cfg
		e.rt.sandboxID = resp.PodSandboxId
		e.mu.Unlock()
		return fail(reason.ErrCreatePodSandbox, ctx.Err(), "interrupted; the sandbox the runtime made will be torn down")
	}
	if err != nil {
		msg := fmt.Sprintf("Failed to create pod sandbox: %s", unwrapCRIMessage(err))
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedCreatePodSandBox, "", msg)
		r := fail(reason.ErrCreatePodSandbox, err, "RunPodSandbox failed")
		r.Warnings = warnings
		return r
	}
	e.mu.Lock()
	e.rt.sandboxConfig = cfg
	e.rt.sandboxID = resp.PodSandboxId
	e.mu.Unlock()
	r := ok("sandbox "+shortID(resp.PodSandboxId)+" running",
		append(append([]Detail{kv("sandbox", resp.PodSandboxId), kv("log dir", cfg.LogDirectory), kv("cgroup parent", orNone(cfg.GetLinux().GetCgroupParent()))}, usernsDetails...), e.settingDetails()...)...)
	r.Warnings = warnings
	return r
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// sandboxStatusStep mirrors SyncPod reading the new sandbox's status for the
// pod IPs it passes to every container config.
type sandboxStatusStep struct{}

func (sandboxStatusStep) mirrors() string {
	return "kubeGenericRuntimeManager.SyncPod step 4, PodSandboxStatus → determinePodSandboxIPs (pkg/kubelet/kuberuntime/kuberuntime_manager.go)"
}

func (sandboxStatusStep) explain() string {
	return "Right after creating the sandbox, the kubelet reads its status to learn the pod IPs the CNI plugin assigned. They go into every container's environment (status.podIP) and the pod's status."
}

func (sandboxStatusStep) requests(e *Engine) []Request {
	return []Request{{Method: "PodSandboxStatus", Message: &runtimeapi.PodSandboxStatusRequest{PodSandboxId: e.placeholderSandbox()}}}
}

func (e *Engine) placeholderSandbox() string {
	if e.rt.sandboxID != "" {
		return e.rt.sandboxID
	}
	return "<sandbox id from RunPodSandbox>"
}

func (sandboxStatusStep) run(ctx context.Context, e *Engine) Result {
	st, err := e.client.PodSandboxStatus(ctx, e.rt.sandboxID)
	if err != nil {
		return fail(reason.ErrCreatePodSandbox, err, "PodSandboxStatus failed")
	}
	var ips []string
	if n := st.GetStatus().GetNetwork(); n != nil {
		if n.Ip != "" {
			ips = append(ips, n.Ip)
		}
		for _, ip := range n.AdditionalIps {
			ips = append(ips, ip.Ip)
		}
	}
	e.rt.podIPs = ips
	e.tracker.SandboxReady(ips)
	ip := "(host network)"
	if len(ips) > 0 {
		ip = strings.Join(ips, ", ")
	}
	return ok(fmt.Sprintf("sandbox %s, IP %s", st.GetStatus().GetState(), ip),
		kv("state", st.GetStatus().GetState().String()), kv("pod IP", ip))
}

// settingDetails say where the node settings the sandbox's config took
// came from, when the caller said (Options.From: run --pod reads them from
// the node's kubelet configuration).
func (e *Engine) settingDetails() []Detail {
	if len(e.opts.From) == 0 {
		return nil
	}
	c := e.opts.Config
	var out []Detail
	for _, s := range []struct{ key, setting, value string }{
		{"cluster DNS", SettingClusterDNS, strings.Join(c.ClusterDNS, ",")},
		{"cluster domain", SettingClusterDomain, c.ClusterDomain},
		{"cgroup root", SettingCgroupRoot, c.CgroupRoot},
	} {
		if f := e.opts.From[s.setting]; f != "" {
			out = append(out, kv(s.key, orNone(s.value)+" from "+f))
		}
	}
	return out
}
