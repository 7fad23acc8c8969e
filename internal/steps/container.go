package steps

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/sim"
)

// createStep mirrors startContainer step 2 (pkg/kubelet/kuberuntime/kuberuntime_container.go):
// generateContainerConfig, then CreateContainer.
type createStep struct{ name string }

func (createStep) mirrors() string {
	return "kubeGenericRuntimeManager.startContainer step 2 → generateContainerConfig, CreateContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go)"
}

func (createStep) explain() string {
	return "The kubelet builds the ContainerConfig: it looks up the image's user (ImageStatus), expands $(VAR) references, resolves env from ConfigMaps, Secrets and the downward API, makes the mounts (volumes, /etc/hosts, the termination-message file), sets the log path and the cgroup resources from requests and limits. A volumeMount with a subPath is made safe first (makeMounts → subpath.PrepareSafeSubpath): the subPath must resolve inside its volume, it is opened one component at a time without following symlinks, and what was opened is bind-mounted at pods/<uid>/volume-subpaths/<volume>/<container>/<index>, the host path the runtime gets, so a symlink a container puts in the volume cannot point the mount at the host. A config it cannot build is CreateContainerConfigError; a CreateContainer the runtime refuses is CreateContainerError."
}

func (s createStep) requests(e *Engine) []Request {
	c := e.rt.containers[s.name]
	status := Request{Method: "ImageStatus", Message: &runtimeapi.ImageStatusRequest{Image: imageUserSpec(c.spec.Image)},
		Note: "looks up the image's user for the config"}
	cfg, err := e.containerConfig(c, e.plannedSubPath(c))
	if err != nil {
		return []Request{status, {Method: "CreateContainer", Note: "not sent: the config cannot be built: " + err.Error()}}
	}
	sb, _, _ := e.sandboxConfig()
	return []Request{status, {Method: "CreateContainer", Message: &runtimeapi.CreateContainerRequest{PodSandboxId: e.placeholderSandbox(), Config: cfg, SandboxConfig: sb}}}
}

// containerConfig builds the config with what is known now; before the
// image step ran, the image ID is a placeholder. prepare makes a subPath
// mount safe (nil: <volume>/<subPath>).
func (e *Engine) containerConfig(c *containerRuntime, prepare func(podcfg.SubPath) (string, error)) (*runtimeapi.ContainerConfig, error) {
	sb, _, err := e.sandboxConfig()
	if err != nil {
		return nil, err
	}
	ref := c.imageRef
	if ref == "" {
		ref = "<image id from ImageStatus>"
	}
	vols := e.rt.volumePaths
	if vols == nil {
		vols = e.plannedVolumePaths()
	}
	ips := e.configPodIPs()
	e.noteExpansions(c, ips)
	hosts := filepath.Join(e.rt.podDir, "etc-hosts")
	return podcfg.ContainerConfig(e.pod, sb, podcfg.ContainerInput{
		Container: c.spec, Init: c.init, RestartCount: c.restarts, ImageRef: ref, ImageUser: c.imageUser, ImageUserUnknown: c.imageUserUnknown,
		PodIP: first(ips), PodIPs: ips, HostIPs: e.hostIPs(), VolumeHostPaths: vols,
		TerminationLogPath: c.termLog, EtcHostsPath: hosts, Env: e.bundle, PrepareSubPath: prepare,
		ImageVolumes: e.plannedImageVolumes(),
	}, e.opts.Config)
}

// configPodIPs are the pod IPs a container config is built with: before the
// sandbox exists, a placeholder. A host-network pod's are the node's: the
// kubelet's generateAPIPodStatus gives such a pod the host IPs as pod IPs,
// and its SyncPod (kubelet.go) copies them into the runtime's pod status
// before the container configs are made, so makeMounts mounts /etc/hosts
// and status.podIP is the node's IP.
func (e *Engine) configPodIPs() []string {
	if e.pod.Spec.HostNetwork {
		return hostNetworkPodIPs(e.pod, e.hostIP())
	}
	if e.rt.sandboxID == "" {
		return []string{"<pod IP from PodSandboxStatus>"}
	}
	return e.rt.podIPs
}

// hostNetworkPodIPs are a host-network pod's IPs: its status's host IPs
// (a pod read from the API server), else hostIP (the Node's, as the admit
// step gives the pod).
func hostNetworkPodIPs(pod *corev1.Pod, hostIP string) []string {
	var ips []string
	for _, ip := range pod.Status.HostIPs {
		if ip.IP != "" {
			ips = append(ips, ip.IP)
		}
	}
	if len(ips) == 0 && pod.Status.HostIP != "" {
		ips = []string{pod.Status.HostIP}
	}
	if len(ips) == 0 && hostIP != "" {
		ips = []string{hostIP}
	}
	return ips
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func (s createStep) run(ctx context.Context, e *Engine) Result {
	c := e.rt.containers[s.name]
	obj := containerObject(c)
	if c.restarts == 0 {
		// A restart keeps showing the last failure (CrashLoopBackOff, …)
		// until the new container runs, as the kubelet's status does.
		e.tracker.Waiting(s.name, reason.ContainerCreating, "")
	}
	st, err := e.client.ImageStatus(ctx, imageUserSpec(c.spec.Image))
	if err != nil {
		return e.createFailed(c, reason.ErrCreateContainerConfig, err, "ImageStatus failed")
	}
	c.imageUserUnknown, c.simImage = false, sim.Image{}
	if img := st.GetImage(); img != nil {
		if img.Uid != nil {
			c.imageUser = strconv.FormatInt(img.Uid.Value, 10)
		} else {
			c.imageUser = img.Username
		}
		if c.imageRef == "" {
			c.imageRef = img.Id
		}
		// The simulator reports no user for an image whose config it cannot
		// read, and says so: on it, that is "unknown", not "root".
		c.imageUserUnknown = e.simulated() && img.Uid == nil && img.Username == "" &&
			img.GetSpec().GetAnnotations()[sim.AnnotationImageConfig] == sim.ImageConfigUnknown
		if e.simulated() {
			c.simImage = sim.ImageOf(c.spec.Image, img)
		}
	}
	// makeMounts: the pod's hosts file and this container's termination-message file.
	if err := writeHostsFile(filepath.Join(e.rt.podDir, "etc-hosts"), e.pod, e.rt.podIPs); err != nil {
		return e.createFailed(c, reason.ErrCreateContainerConfig, err, "cannot write etc-hosts")
	}
	// GenerateRunContainerOptions makes containers/<name> (not makePodDataDirs).
	if err := mkdirAll(filepath.Dir(c.termLog), 0o750); err != nil {
		return e.createFailed(c, reason.ErrCreateContainerConfig, err, "cannot make the termination-message file")
	}
	// Made empty, nothing written: the container writes it.
	if err := writeFile(c.termLog, unix.O_CREAT, nil, 0o666, true); err != nil {
		return e.createFailed(c, reason.ErrCreateContainerConfig, err, "cannot make the termination-message file")
	}
	subPaths := &subPathLog{}
	cfg, err := e.containerConfig(c, e.prepareSubPath(c, subPaths))
	if err != nil {
		// A missing ConfigMap/Secret or key (podcfg.ConfigError), a subPath
		// that leaves its volume, like any config the kubelet cannot build,
		// is CreateContainerConfigError.
		summary := "cannot build the container config"
		if subPaths.err != nil {
			summary = "subPath refused: cannot build the container config"
		}
		r := e.createFailed(c, reason.ErrCreateContainerConfig, err, summary)
		r.Details, r.Warnings = subPaths.details, subPaths.warnings
		r.RestsOn = e.imageUserRestsOn(c)
		return r
	}
	sb, _, _ := e.sandboxConfig()
	// generateContainerConfig makes the container's log dir
	// (BuildContainerLogsDirectory, MkdirAll 0755) before CreateContainer;
	// the runtime makes only the file in it.
	if dir := sb.GetLogDirectory(); dir != "" {
		if err := mkdirAll(filepath.Join(dir, filepath.Dir(cfg.GetLogPath())), 0o755); err != nil {
			return e.createFailed(c, reason.ErrCreateContainerConfig, err, "cannot make the container's log directory")
		}
	}
	// Like RunPodSandbox, a CreateContainer is not abandoned on cancel: its
	// container must be known to be torn down.
	cctx := context.WithoutCancel(ctx)
	if why := e.runsToCompletion(c); why != "" && e.simulated() {
		// For a command the simulator cannot read (sim.Decide); not part of the request.
		cctx = metadata.AppendToOutgoingContext(cctx, sim.MetadataRunsToCompletion, why)
	}
	if ports := simProbePorts(c.spec); len(ports) > 0 && e.simulated() {
		// The ports the simulator is to serve besides the declared ones; not part of the request.
		cctx = metadata.AppendToOutgoingContext(cctx, sim.MetadataProbePorts, sim.FormatProbePorts(ports))
	}
	resp, err := e.client.CreateContainer(cctx, &runtimeapi.CreateContainerRequest{PodSandboxId: e.rt.sandboxID, Config: cfg, SandboxConfig: sb})
	if err != nil {
		r := e.createFailed(c, reason.ErrCreateContainer, err, "CreateContainer failed")
		r.Details = append(r.Details, imageMountHint(cfg)...)
		return r
	}
	e.mu.Lock()
	c.config = cfg
	c.id = resp.ContainerId
	e.mu.Unlock()
	if ctx.Err() != nil {
		return fail(reason.ErrCreateContainer, ctx.Err(), "interrupted; the container the runtime made will be torn down")
	}
	e.tracker.Created(s.name, "containerd://"+resp.ContainerId, c.imageRef)
	if c.restarts > 0 {
		e.tracker.RestartCount(s.name, c.restarts)
	}
	e.tracker.Record(corev1.EventTypeNormal, reason.CreatedContainer, obj, "Created container: "+s.name)
	r := ok("container "+shortID(resp.ContainerId)+" created"+subPaths.summary(),
		kv("container", resp.ContainerId), kv("image", c.imageRef), kv("log", filepath.Join(sb.LogDirectory, cfg.LogPath)))
	r.Details = append(r.Details, subPaths.details...)
	r.Warnings = subPaths.warnings
	if c.imageUserUnknown && podcfg.RunAsNonRootNeedsImageUser(e.pod, c.spec) {
		r.RestsOn = append(r.RestsOn, fmt.Sprintf("assumed: image user unknown: runAsNonRoot with no runAsUser is decided by the USER of %s, which the simulator cannot read; "+
			"verifyRunAsNonRoot (pkg/kubelet/kuberuntime/security_context_others.go) cannot be known here and the container goes on: "+
			"on a node this passes if the image's USER is a non-zero numeric uid, and fails if it is root, unset (root) or a user name", c.spec.Image))
	}
	r.RestsOn = append(r.RestsOn, e.imageUserRestsOn(c)...)
	if e.bundle.Services != nil {
		v := "none: no Service with a cluster IP"
		if src := podcfg.ServiceEnvSources(e.pod, e.bundle.Services); len(src) > 0 {
			v = "from " + strings.Join(src, ", ") + ", read from the API server, after the container's own variables"
		}
		r.Details = append(r.Details, kv("service env", v+" (getServiceEnvVarMap: default/kubernetes always, the namespace's with enableServiceLinks)"))
	}
	if d, w := e.stopSignalNote(c.spec); d != nil {
		r.Details = append(r.Details, *d)
	} else if w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	return r
}

// stopSignalNote says what happened to the container's lifecycle.stopSignal
// (KEP-4960) in generateContainerConfig: sent as stop_signal when
// ContainerStopSignals is on; otherwise a warning, as the kubelet (and an API
// server with the gate off, which drops the field) sends nothing.
func (e *Engine) stopSignalNote(c *corev1.Container) (*Detail, string) {
	sig, set := podcfg.StopSignal(c, e.opts.Config.Gates)
	if !set {
		return nil, ""
	}
	if name := podcfg.SignalName(sig); name != "" {
		d := kv("stop signal", name+" (lifecycle.stopSignal, sent as ContainerConfig.stop_signal: StopContainer makes the runtime send it instead of the image's STOPSIGNAL or SIGTERM; containerd 1.6 ignores the field)")
		return &d, ""
	}
	return nil, fmt.Sprintf("lifecycle.stopSignal %s not sent: feature gate %s; an API server with it off drops the field and the kubelet sends no stop_signal (--feature-gates %s=true sends it)",
		*c.Lifecycle.StopSignal, e.opts.Config.Gates.Describe(gate.ContainerStopSignals), gate.ContainerStopSignals)
}

// createFailed records a create that failed with the kubelet's reason why
// (ErrCreateContainerConfig or ErrCreateContainer).
func (e *Engine) createFailed(c *containerRuntime, why string, err error, summary string) Result {
	msg := unwrapCRIMessage(err)
	e.tracker.Record(corev1.EventTypeWarning, reason.FailedToCreateContainer, containerObject(c), "Error: "+msg)
	e.tracker.Waiting(c.spec.Name, why, msg)
	return fail(why, err, summary)
}

// etcHosts is the node's hosts file, which a host-network pod's copies (a
// variable for the tests).
var etcHosts = "/etc/hosts"

// writeHostsFile writes the kubelet-managed hosts file (managedHostsHeader
// and nodeHostsFileContent in pkg/kubelet/kubelet_pods.go).
func writeHostsFile(path string, pod *corev1.Pod, ips []string) error {
	var b strings.Builder
	if pod.Spec.HostNetwork {
		// ensureHostsFile (kubelet_pods.go): a host-network pod's is the
		// node's own /etc/hosts under a header of its own.
		node, err := os.ReadFile(etcHosts)
		if err != nil {
			return err
		}
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(node)
		return writeFile(path, unix.O_CREAT|unix.O_TRUNC, []byte(b.String()), 0o644, false)
	}
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		fmt.Fprintf(&b, "%s\t%s\n", ip, pod.GetName())
	}
	return writeFile(path, unix.O_CREAT|unix.O_TRUNC, []byte(b.String()), 0o644, false)
}

// mkdirAll is os.MkdirAll for a dir whose parent is expected to exist: one
// mkdir, where os.MkdirAll first stats the dir and then its parent.
func mkdirAll(dir string, perm os.FileMode) error {
	if err := os.Mkdir(dir, perm); err == nil {
		return nil
	}
	return os.MkdirAll(dir, perm) // there already, a missing parent, or the error
}

// writeFile opens path write-only with flag (made with perm less the
// umask; with chmod, perm whatever the umask if it may, by the handle) and writes
// data, as os.WriteFile does but by plain system calls: an os.File of a
// regular file also tries the poller (four fcntl and an epoll_ctl that
// fails), most of the calls for these two small files a container has
// (issue 34: 10,000 of a 1,000-container run's system calls).
func writeFile(path string, flag int, data []byte, perm uint32, chmod bool) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC|flag, perm)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	for len(data) > 0 && err == nil {
		var n int
		if n, err = unix.Write(fd, data); err == nil {
			data = data[n:]
		}
	}
	if err != nil {
		err = &os.PathError{Op: "write", Path: path, Err: err}
	} else if chmod {
		_ = unix.Fchmod(fd, perm) // as os.Chmod was: a refused chmod leaves the umask's mode
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = &os.PathError{Op: "close", Path: path, Err: cerr}
	}
	return err
}

// startStep mirrors startContainer step 3: StartContainer.
type startStep struct{ name string }

func (startStep) mirrors() string {
	return "kubeGenericRuntimeManager.startContainer step 3 → StartContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go)"
}

func (startStep) explain() string {
	return "The kubelet asks the runtime to start the created container; the runtime starts its process inside the sandbox's namespaces. A refused start is RunContainerError."
}

func (s startStep) requests(e *Engine) []Request {
	id := e.rt.containers[s.name].id
	if id == "" {
		id = "<container id from CreateContainer>"
	}
	return []Request{{Method: "StartContainer", Message: &runtimeapi.StartContainerRequest{ContainerId: id}}}
}

func (s startStep) run(ctx context.Context, e *Engine) Result {
	c := e.rt.containers[s.name]
	obj := containerObject(c)
	if _, err := e.client.StartContainer(ctx, c.id); err != nil {
		msg := unwrapCRIMessage(err)
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToStartContainer, obj, "Error: "+msg)
		e.tracker.Waiting(s.name, reason.ErrRunContainer, msg)
		return fail(reason.ErrRunContainer, err, "StartContainer failed")
	}
	c.startedAt = e.now()
	e.tracker.Running(s.name, c.startedAt)
	e.tracker.Record(corev1.EventTypeNormal, reason.StartedContainer, obj, "Started container "+s.name)
	r := ok("container " + shortID(c.id) + " started")
	if e.simulated() {
		r.RestsOn = []string{e.simulatedBehaviour(c).RestsOn}
	}
	return r
}

// simulatedBehaviour is what the simulator makes of a started container
// (sim.Decide, with what its StartContainer sees: the pod's annotations
// and the container's, and why the spec runs it to completion).
func (e *Engine) simulatedBehaviour(c *containerRuntime) sim.Behaviour {
	ann := map[string]string{}
	if sb, _, err := e.sandboxConfig(); err == nil {
		maps.Copy(ann, sb.GetAnnotations())
	}
	maps.Copy(ann, c.config.GetAnnotations())
	img := c.simImage
	if img.Name == "" {
		img.Name = c.spec.Image
	}
	return sim.Decide(c.config, ann, img, e.runsToCompletion(c))
}

// imageUserRestsOn says, on the simulator, that verifyRunAsNonRoot was
// decided by the image's USER as read from its registry (nil when it was
// not, or the USER did not decide).
func (e *Engine) imageUserRestsOn(c *containerRuntime) []string {
	if !e.simulated() || c.simImage.Config == nil || !podcfg.RunAsNonRootNeedsImageUser(e.pod, c.spec) {
		return nil
	}
	user := "none (no USER: root)"
	if u := c.simImage.Config.User; u != "" {
		if _, err := strconv.ParseInt(u, 10, 64); err == nil {
			user = "uid " + u
		} else {
			user = "username " + strconv.Quote(u)
		}
	}
	return []string{fmt.Sprintf("image user: %s, image config from %s (runAsNonRoot with no runAsUser: verifyRunAsNonRoot decides by it)", user, c.simImage.Source)}
}

// runsToCompletion says why the pod's spec runs c to completion ("" when
// it keeps it running): a classic init container, or a regular container
// whose restart policy (the container's own with ContainerRestartRules,
// else the pod's) is not Always.
func (e *Engine) runsToCompletion(c *containerRuntime) string {
	if c.init {
		if isSidecar(c.spec) {
			return ""
		}
		return "an init container"
	}
	policy := string(e.pod.Spec.RestartPolicy)
	if c.spec.RestartPolicy != nil && e.opts.Config.Gates.Enabled(gate.ContainerRestartRules) {
		policy = string(*c.spec.RestartPolicy)
	}
	if policy == "" || policy == string(corev1.RestartPolicyAlways) {
		return ""
	}
	return "restartPolicy: " + policy
}

// imageUserSpec is the ImageSpec of kuberuntime/helpers.go getImageUser,
// which generateContainerConfig calls with container.Image: the image
// alone, no annotations.
func imageUserSpec(image string) *runtimeapi.ImageSpec {
	return &runtimeapi.ImageSpec{Image: image}
}
