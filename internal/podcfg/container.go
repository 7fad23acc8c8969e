package podcfg

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerConfig builds the ContainerConfig the kubelet sends with
// CreateContainer, mirroring kuberuntime_container.go generateContainerConfig:
// GenerateRunContainerOptions (kubelet_pods.go makeEnvironmentVariables,
// makeMounts), getImageUser + verifyRunAsNonRoot, ExpandContainerCommandAndArgs,
// newContainerLabels / newContainerAnnotations (labels.go), makeMounts
// (termination-log), and kuberuntime_container_linux.go
// generateLinuxContainerConfig (resources, security context).
//
// sandbox is the config sent with RunPodSandbox; the container's namespace
// options are taken from it so both always agree (the kubelet computes both
// with NamespacesForPod). Errors the kubelet reports as
// CreateContainerConfigError are *ConfigError.
func ContainerConfig(pod *corev1.Pod, sandbox *runtimeapi.PodSandboxConfig, in ContainerInput, o Options) (*runtimeapi.ContainerConfig, error) {
	c := in.Container
	if c == nil {
		return nil, errors.New("podcfg: ContainerInput.Container is nil")
	}
	env, err := environment(pod, c, in, o, false)
	if err != nil {
		return nil, err
	}
	uid, username := imageUser(in.ImageUser)
	if in.ImageUserUnknown {
		uid, username = nil, ""
	}
	if err := verifyRunAsNonRoot(pod, c, uid, username); err != nil {
		return nil, err
	}
	cmd, args := expandCommandAndArgs(c, env)
	mounts, err := containerMounts(pod, c, in, env)
	if err != nil {
		return nil, err
	}

	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(in.RestartCount)},
		Image:    &runtimeapi.ImageSpec{Image: in.ImageRef, UserSpecifiedImage: c.Image},
		Command:  cmd,
		Args:     args,
		// WorkingDir is sent as is ("" lets the runtime use the image's).
		WorkingDir:  c.WorkingDir,
		Labels:      containerLabels(pod, c, o),
		Annotations: containerAnnotations(pod, c, in.RestartCount),
		Mounts:      mounts,
		LogPath:     filepath.Join(c.Name, strconv.Itoa(in.RestartCount)+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
	}
	cfg.StopSignal, _ = StopSignal(c, o.Gates)

	var ns *runtimeapi.NamespaceOption
	if sc := sandbox.GetLinux().GetSecurityContext(); sc != nil && sc.NamespaceOptions != nil {
		ns = cloneNamespaceOptions(sc.NamespaceOptions)
	} else if ns, err = namespaceOptions(pod, o); err != nil {
		return nil, err
	}
	lsc, err := containerSecurityContext(pod, c, uid, username, ns, o.rootDir(), o.ThermalThrottlePaths)
	if err != nil {
		return nil, &ConfigError{Msg: err.Error()}
	}
	cfg.Linux = &runtimeapi.LinuxContainerConfig{
		Resources:       containerResources(pod, c, o),
		SecurityContext: lsc,
	}
	idMappedMounts(cfg.Mounts, ns)
	for _, v := range env.vars {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: v.name, Value: []byte(v.value)})
	}
	return cfg, nil
}

func cloneNamespaceOptions(n *runtimeapi.NamespaceOption) *runtimeapi.NamespaceOption {
	out := &runtimeapi.NamespaceOption{Network: n.Network, Pid: n.Pid, Ipc: n.Ipc, TargetId: n.TargetId}
	if n.UsernsOptions != nil {
		out.UsernsOptions = &runtimeapi.UserNamespace{Mode: n.UsernsOptions.Mode, Uids: n.UsernsOptions.Uids, Gids: n.UsernsOptions.Gids}
	}
	return out
}

// expandCommandAndArgs mirrors container/helpers.go ExpandContainerCommandAndArgs.
func expandCommandAndArgs(c *corev1.Container, env *envList) (cmd, args []string) {
	for _, s := range c.Command {
		cmd = append(cmd, env.expand(s))
	}
	for _, s := range c.Args {
		args = append(args, env.expand(s))
	}
	return cmd, args
}

// containerLabels mirrors labels.go newContainerLabels: only the four
// io.kubernetes.* keys (the trace confirms: no pod labels on containers),
// plus Options.ExtraLabels.
func containerLabels(pod *corev1.Pod, c *corev1.Container, o Options) map[string]string {
	l := map[string]string{}
	for k, v := range o.ExtraLabels {
		l[k] = v
	}
	l[LabelPodName] = pod.Name
	l[LabelPodNamespace] = pod.Namespace
	l[LabelPodUID] = string(pod.UID)
	l[LabelContainerName] = c.Name
	return l
}

// containerAnnotations mirrors labels.go newContainerAnnotations (no device
// plugin annotations; no hashWithoutResources, which v1.37 no longer sends).
func containerAnnotations(pod *corev1.Pod, c *corev1.Container, restartCount int) map[string]string {
	a := map[string]string{
		annContainerHash:        ContainerHash(c),
		annRestartCount:         strconv.Itoa(restartCount),
		annTerminationMsgPath:   c.TerminationMessagePath,
		annTerminationMsgPolicy: string(c.TerminationMessagePolicy),
	}
	if pod.DeletionGracePeriodSeconds != nil {
		a[annPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[annPodTerminationGrace] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if js, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[annPreStopHandler] = string(js)
		}
	}
	if len(c.Ports) > 0 {
		if js, err := json.Marshal(c.Ports); err == nil {
			a[annContainerPorts] = string(js)
		}
	}
	return a
}

// containerMounts mirrors kubelet_pods.go makeMounts followed by the
// termination-log mount of kuberuntime_container.go makeMounts: the
// volumeMounts in order, then /etc/hosts, then the termination log. A
// subPath is checked as makeMounts checks it (absolute, "..") and then
// handed to in.PrepareSubPath, which stands for subpath.Interface. SELinux
// relabelling is off (the kubelet sets it only on SELinux-enabled hosts).
func containerMounts(pod *corev1.Pod, c *corev1.Container, in ContainerInput, env *envList) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	mountEtcHosts := in.EtcHostsPath != "" && (len(in.PodIPs) > 0 || in.PodIP != "")
	for i, vm := range c.VolumeMounts {
		if vm.MountPath == "/etc/hosts" {
			mountEtcHosts = false
		}
		host, ok := in.VolumeHostPaths[vm.Name]
		if !ok {
			return nil, &ConfigError{Msg: fmt.Sprintf("cannot find volume %q to mount into container %q", vm.Name, c.Name)}
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if sub, err = env.expandSubPath(vm.SubPathExpr); err != nil {
				return nil, err
			}
		}
		if sub != "" {
			if filepath.IsAbs(sub) {
				return nil, &ConfigError{Msg: fmt.Sprintf("error SubPath `%s` must not be an absolute path", sub)} //nolint:gocritic // the kubelet's text (makeMounts), verbatim
			}
			if !filepath.IsLocal(sub) {
				return nil, &ConfigError{Msg: fmt.Sprintf("unable to provision SubPath `%s`: must not contain '..'", sub)} //nolint:gocritic // the kubelet's text (makeMounts), verbatim
			}
		}
		// An image volume: the runtime mounts the image (its sub path, for
		// a subPath) read-only; the kubelet sends no host path.
		if img := in.ImageVolumes[vm.Name]; img != nil {
			prop, err := mountPropagation(vm.MountPropagation)
			if err != nil {
				return nil, &ConfigError{Msg: err.Error()}
			}
			mounts = append(mounts, &runtimeapi.Mount{
				ContainerPath:     vm.MountPath,
				Image:             img,
				ImageSubPath:      sub,
				Readonly:          true,
				Propagation:       prop,
				RecursiveReadOnly: vm.ReadOnly && vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyEnabled,
			})
			continue
		}
		if sub != "" {
			if in.PrepareSubPath == nil {
				host = filepath.Join(host, sub)
			} else {
				bound, err := in.PrepareSubPath(SubPath{Index: i, Volume: vm.Name, VolumePath: host, SubPath: sub})
				if err != nil {
					return nil, &ConfigError{Msg: err.Error()}
				}
				host = bound
			}
		}
		prop, err := mountPropagation(vm.MountPropagation)
		if err != nil {
			return nil, &ConfigError{Msg: err.Error()}
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath:     vm.MountPath,
			HostPath:          host,
			Readonly:          vm.ReadOnly || mustMountRO(pod, vm.Name),
			Propagation:       prop,
			RecursiveReadOnly: vm.ReadOnly && vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyEnabled,
		})
	}
	if mountEtcHosts {
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: in.EtcHostsPath})
	}
	if in.TerminationLogPath != "" && c.TerminationMessagePath != "" {
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: in.TerminationLogPath})
	}
	return mounts, nil
}

// mountPropagation mirrors kubelet_pods.go translateMountPropagation.
func mountPropagation(p *corev1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	if p == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *p {
	case corev1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case corev1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case corev1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q", *p)
}

// mustMountRO mirrors makeMounts' `mount.ReadOnly || mustMountRO`
// (pkg/kubelet/kubelet_pods.go): the configMap, secret, downwardAPI and
// projected plugins report their volumes read-only (Mounter.GetAttributes),
// so the kubelet mounts them read-only whatever the volumeMount says; so
// does the image plugin (pkg/volume/image/image.go GetAttributes).
func mustMountRO(pod *corev1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil || v.Image != nil
		}
	}
	return false
}
