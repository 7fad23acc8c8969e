package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/rmtree"
	"github.com/podstep/podstep/internal/volume"
)

// minimumGracePeriod is the kubelet's floor for a container's grace period
// (minimumGracePeriodInSeconds, kuberuntime_manager.go): killContainer
// (kuberuntime_container.go) raises every grace period below it, an
// override's too. podstep's --grace-period is sent as given.
const minimumGracePeriod = 2

// gracePeriod is what killContainer gives StopContainer: the pod's
// terminationGracePeriodSeconds (at least 2 s), or the override.
func (e *Engine) gracePeriod() int64 {
	if e.opts.GracePeriod != nil {
		return *e.opts.GracePeriod
	}
	g := int64(30)
	if e.pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *e.pod.Spec.TerminationGracePeriodSeconds
	}
	if g < minimumGracePeriod {
		g = minimumGracePeriod
	}
	return g
}

// instance is one container in the runtime: a container of the pod may
// have several, one per attempt.
type instance struct {
	c  *containerRuntime
	id string
}

// created lists the containers that exist in the runtime, in creation order.
func (e *Engine) created() []instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.createdLocked()
}

// stopContainersStep mirrors KillPod → killContainersWithSyncResult
// (pkg/kubelet/kuberuntime/kuberuntime_container.go): all containers are
// stopped in parallel, each with the grace period; sidecars after the
// regular containers, the last declared first (stopOrder).
type stopContainersStep struct{}

func (stopContainersStep) mirrors() string {
	return "kubeGenericRuntimeManager.KillPod → killContainersWithSyncResult → killContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go)"
}

func (stopContainersStep) explain() string {
	return "When a pod is deleted the kubelet stops all its containers in parallel: StopContainer makes the runtime send the stop signal (SIGTERM, unless the image's STOPSIGNAL or, with ContainerStopSignals, lifecycle.stopSignal says otherwise), then SIGKILL once the grace period (terminationGracePeriodSeconds, at least 2 s) is over. A process that ignores SIGTERM, like `sleep` as PID 1, takes the whole grace period. Sidecars (init containers with restartPolicy Always) are stopped after the regular containers, the last declared first, each with what is left of the grace period."
}

func (stopContainersStep) requests(e *Engine) []Request {
	var out []Request
	for _, in := range e.createdLocked() {
		if in.id == in.c.id {
			out = append(out, Request{Method: "StopContainer", Message: &runtimeapi.StopContainerRequest{ContainerId: in.id, Timeout: e.gracePeriod()},
				Note: in.c.spec.Name + ", if it runs"})
		}
	}
	return out
}

// createdLocked is created() for callers that hold e.mu.
func (e *Engine) createdLocked() []instance {
	var out []instance
	for _, n := range e.rt.order {
		c := e.rt.containers[n]
		for _, id := range c.oldIDs {
			out = append(out, instance{c, id})
		}
		if c.id != "" {
			out = append(out, instance{c, c.id})
		}
	}
	return out
}

func (stopContainersStep) run(ctx context.Context, e *Engine) Result {
	cs := e.created()
	if len(cs) == 0 {
		return ok("no containers to stop")
	}
	grace := e.gracePeriod()
	running := runningContainers(e.tracker.Snapshot())
	errs := make([]error, len(cs))
	stopped := 0
	began := time.Now()
	for n, group := range e.stopOrder(cs) {
		// A sidecar's grace period loses the whole seconds it waited for
		// its turn, but not below the minimum (killContainer).
		g := grace
		if n > 0 && g > 0 {
			g = max(g-int64(time.Since(began).Seconds()), minimumGracePeriod)
		}
		var wg sync.WaitGroup
		for _, i := range group {
			in := cs[i]
			// Only a running container is stopped, and killed, as the
			// kubelet does: its killPod gets the pod from
			// ConvertPodStatusToRunningPod (pkg/kubelet/container/helpers.go),
			// which keeps the running containers only, and killContainer
			// records Killing for each. An exited one (an earlier attempt, an
			// init container, a finished job) is left to StopPodSandbox and
			// RemoveContainer.
			if in.id != in.c.id || !running[in.c.spec.Name] {
				continue
			}
			stopped++
			e.tracker.Record(corev1.EventTypeNormal, reason.KillingContainer, containerObject(in.c), "Stopping container "+in.c.spec.Name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.client.StopContainer(ctx, in.id, g); err != nil && !notFound(err) {
					errs[i] = fmt.Errorf("stop container %q: %w", in.c.spec.Name, err)
				}
			}()
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return fail(reason.ErrKillContainer, err, "some containers did not stop")
	}
	if stopped == 0 {
		return ok("no running containers to stop")
	}
	r := ok(fmt.Sprintf("stopped %s, grace period %ds", plural(stopped, "container", "containers"), grace))
	for _, in := range cs {
		if in.id != in.c.id || in.c.config == nil {
			continue
		}
		if name := podcfg.SignalName(in.c.config.StopSignal); name != "" {
			r.Details = append(r.Details, kv(in.c.spec.Name+" stop signal", name+" (its ContainerConfig.stop_signal: the runtime sends it, then SIGKILL after the grace period; a runtime that ignores the field sends the image's STOPSIGNAL or SIGTERM)"))
		}
	}
	return r
}

// stopOrder groups cs (indexes) in the order the kubelet stops them: a pod
// without sidecars all at once; with sidecars (restartable init
// containers) the regular containers (and the init containers that are not
// sidecars) at once, then each sidecar in the reverse order of its
// declaration, once the ones after it are stopped (killContainersWithSyncResult
// with a terminationOrdering, pkg/kubelet/kuberuntime/kuberuntime_termination_order.go:
// a sidecar's killContainer waits for the main containers and the sidecars
// declared after it).
func (e *Engine) stopOrder(cs []instance) [][]int {
	var sidecars []string
	for i := range e.pod.Spec.InitContainers {
		if c := &e.pod.Spec.InitContainers[i]; isSidecar(c) {
			sidecars = append(sidecars, c.Name)
		}
	}
	groups := make([][]int, 1+len(sidecars))
	for i, in := range cs {
		g := 0
		if in.c.init {
			for j, name := range sidecars {
				if name == in.c.spec.Name {
					g = len(sidecars) - j // the last declared first
				}
			}
		}
		groups[g] = append(groups[g], i)
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// runningContainers names the containers the pod's status shows running.
func runningContainers(pod podstate.Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range list {
			if c.State.Running != nil {
				out[c.Name] = true
			}
		}
	}
	return out
}

// notFound reports a NotFound answer: the object is already gone, which
// teardown counts as done. status.Code sees through cri.Error's wrapping.
func notFound(err error) bool { return isNotFound(err) }

// stopSandboxStep mirrors KillPod → StopPodSandbox.
type stopSandboxStep struct{}

func (stopSandboxStep) mirrors() string {
	return "kubeGenericRuntimeManager.KillPod → killPodWithSyncResult → StopPodSandbox (pkg/kubelet/kuberuntime/kuberuntime_manager.go)"
}

func (stopSandboxStep) explain() string {
	return "After its containers, the kubelet stops the pod sandbox: the runtime tears down the pod's network through CNI (releasing the IP) and stops the pause container."
}

func (stopSandboxStep) requests(e *Engine) []Request {
	if e.rt.sandboxID == "" {
		return nil
	}
	return []Request{{Method: "StopPodSandbox", Message: &runtimeapi.StopPodSandboxRequest{PodSandboxId: e.rt.sandboxID}}}
}

func (stopSandboxStep) run(ctx context.Context, e *Engine) Result {
	if e.SandboxID() == "" {
		return ok("no sandbox to stop")
	}
	if _, err := e.client.StopPodSandbox(ctx, e.SandboxID()); err != nil {
		return fail(reason.ErrKillPodSandbox, err, "StopPodSandbox failed")
	}
	e.tracker.SandboxGone()
	return ok("sandbox " + shortID(e.SandboxID()) + " stopped")
}

// removeContainersStep mirrors the container garbage collector removing
// the dead pod's containers (containerGC.evictContainers, kuberuntime_gc.go).
type removeContainersStep struct{}

func (removeContainersStep) mirrors() string {
	return "containerGC.evictContainers → removeContainer (pkg/kubelet/kuberuntime/kuberuntime_gc.go)"
}

func (removeContainersStep) explain() string {
	return "The kubelet's container garbage collector removes the stopped containers of deleted pods, with their log files."
}

func (removeContainersStep) requests(e *Engine) []Request {
	var out []Request
	for _, in := range e.createdLocked() {
		out = append(out, Request{Method: "RemoveContainer", Message: &runtimeapi.RemoveContainerRequest{ContainerId: in.id}})
	}
	return out
}

func (removeContainersStep) run(ctx context.Context, e *Engine) Result {
	cs := e.created()
	if len(cs) == 0 {
		return ok("no containers to remove")
	}
	var errs []error
	for _, in := range cs {
		if err := e.removeContainer(ctx, in.id); err != nil {
			errs = append(errs, fmt.Errorf("remove container %q: %w", in.c.spec.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fail(reason.ErrRemoveContainer, err, "some containers were not removed")
	}
	return ok(fmt.Sprintf("removed %s", plural(len(cs), "container", "containers")))
}

// startingWait bounds how long teardown waits for a container "in starting
// state" (see removeContainer).
const startingWait = 30 * time.Second

// removeContainer removes one container and records that it is gone. A
// container whose StartContainer has not ended yet (it was sent before the
// runtime stopped answering, or timed out) cannot be removed: containerd
// answers "container is in starting state, can't be removed"
// (setContainerRemoving, pkg/cri/server/container_remove.go). Teardown then
// waits until the start ends, with the container started or failed, stops
// it if it runs (the kubelet stops before it removes: killContainer, then
// removeContainer in kuberuntime_container.go), and removes it.
func (e *Engine) removeContainer(ctx context.Context, id string) error {
	deadline := time.Now().Add(startingWait)
	for {
		_, err := e.client.RemoveContainer(ctx, id)
		if err == nil || notFound(err) {
			e.mu.Lock()
			e.rt.removed[id] = true
			e.mu.Unlock()
			return nil
		}
		if !strings.Contains(unwrapCRIMessage(err), "starting state") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
		if st, serr := e.client.ContainerStatus(ctx, id); serr == nil && st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if _, err := e.client.StopContainer(ctx, id, e.gracePeriod()); err != nil && !notFound(err) {
				return err
			}
		}
	}
}

// removeSandboxStep mirrors the garbage collector removing the sandbox
// (containerGC.evictSandboxes / podSandboxDeleter).
type removeSandboxStep struct{}

func (removeSandboxStep) mirrors() string {
	return "containerGC.evictSandboxes → RemovePodSandbox (pkg/kubelet/kuberuntime/kuberuntime_gc.go)"
}

func (removeSandboxStep) explain() string {
	return "Finally the garbage collector removes the stopped sandbox, which frees its name so a pod with the same name and UID can be created again."
}

func (removeSandboxStep) requests(e *Engine) []Request {
	if e.rt.sandboxID == "" {
		return nil
	}
	return []Request{{Method: "RemovePodSandbox", Message: &runtimeapi.RemovePodSandboxRequest{PodSandboxId: e.rt.sandboxID}}}
}

func (removeSandboxStep) run(ctx context.Context, e *Engine) Result {
	id := e.SandboxID()
	if id == "" {
		return ok("no sandbox to remove")
	}
	if _, err := e.client.RemovePodSandbox(ctx, id); err != nil && !notFound(err) {
		return fail(reason.RemovePodSandboxError, err, "RemovePodSandbox failed")
	}
	// The runtime removes a sandbox's containers with it (CRI
	// RemovePodSandbox), so they are gone too.
	e.mu.Lock()
	e.rt.sandboxGone = true
	for _, in := range e.createdLocked() {
		e.rt.removed[in.id] = true
	}
	e.mu.Unlock()
	return ok("sandbox " + shortID(id) + " removed")
}

// removeDirsStep mirrors Kubelet.cleanupOrphanedPodDirs
// (pkg/kubelet/kubelet_volumes.go) and the removal of the pod's log
// directory by the container GC.
type removeDirsStep struct{}

func (removeDirsStep) mirrors() string {
	return "Kubelet.cleanupOrphanedPodDirs (pkg/kubelet/kubelet_volumes.go); containerGC.evictPodLogsDirectories (kuberuntime_gc.go)"
}

func (removeDirsStep) explain() string {
	return "Once the pod's volumes are unmounted, the kubelet removes the pod's data directory pods/<uid>, and the garbage collector removes its log directory."
}

func (removeDirsStep) requests(*Engine) []Request { return nil }

func (removeDirsStep) run(ctx context.Context, e *Engine) Result {
	e.mu.Lock()
	inUse := e.containersLeftLocked()
	podDir, logDir := "", e.rt.logDir
	if e.rt.dirsCreated {
		podDir = e.rt.podDir
	}
	e.mu.Unlock()
	if podDir == "" && logDir == "" {
		return ok("no directories to remove")
	}
	if len(inUse) > 0 {
		// cleanupOrphanedPodDirs leaves the dirs of a pod the runtime still
		// lists, and the volume manager unmounts a pod's volumes only once
		// its containers are gone: they may still use the volumes, and the
		// runtime still writes their logs.
		err := fmt.Errorf("the runtime did not confirm that the pod's containers are gone (%s): they may still use its volumes and write its logs", strings.Join(inUse, ", "))
		r := fail(reason.PodDirsKept, err, "pod directories kept")
		for _, d := range []string{podDir, logDir} {
			if d != "" {
				r.Details = append(r.Details, kv("kept", d))
			}
		}
		return r
	}
	var removed []string
	var errs []error
	var details []Detail
	if podDir != "" {
		// CSI volumes first: the kubelet's reconciler unpublishes them
		// (csiMountMgr.TearDownAt), then unstages a staged one
		// (csiAttacher.UnmountDevice), once the containers are gone.
		d, err := e.teardownCSI(ctx)
		if err != nil {
			r := fail(reason.RemoveDirsError, err, "CSI volumes not unpublished: pod directories kept")
			d = append(d, kv("kept", podDir))
			r.Details = d
			return r
		}
		details = append(details, d...)
		// Volumes first: the kubelet unmounts them, subPath bind mounts
		// first (UnmountVolume: CleanSubPaths, then TearDown), before it may
		// remove the pod dir; RemoveAll would go through a mount left there.
		ms, err := volume.TeardownPod(podDir)
		for _, m := range ms {
			details = append(details, kv("unmounted", m.Path+" ("+m.FSType+")"))
		}
		if err == nil {
			var d []Detail
			d, err = e.unmountDevices()
			details = append(details, d...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("unmount volumes: %w", err))
		} else if err := rmtree.RemoveAll(podDir); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, podDir)
		}
	}
	if logDir != "" {
		if err := rmtree.RemoveAll(logDir); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, logDir)
		}
	}
	e.mu.Lock()
	for _, d := range removed {
		e.rt.dirsRemoved[d] = true
	}
	e.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		r := fail(reason.RemoveDirsError, err, "pod directories not removed")
		r.Details = details
		return r
	}
	for _, r := range removed {
		details = append(details, kv("removed", r))
	}
	return ok(fmt.Sprintf("removed %s", plural(len(removed), "directory", "directories")), details...)
}

// teardownCSI undoes the CSI volumes the volumes stage set up, as the
// kubelet's reconciler does (reconciler.go: unmountVolumes, then
// unmountDetachDevices): every NodeUnpublishVolume (the last volume set up
// first), then every NodeUnstageVolume, each call recorded in this step. A
// volume whose calls failed stays listed (and the pod dir is kept):
// nothing is removed through a mount.
func (e *Engine) teardownCSI(ctx context.Context) ([]Detail, error) {
	e.mu.Lock()
	vols := append([]*volume.CSIResult(nil), e.rt.csiVolumes...)
	e.mu.Unlock()
	var details []Detail
	var errs []error
	for i := len(vols) - 1; i >= 0; i-- {
		v := vols[i]
		if !v.State.Published {
			continue
		}
		if err := volume.UnpublishCSI(ctx, e.opts.CSI, v); err != nil {
			errs = append(errs, err)
			continue
		}
		details = append(details, kv("unpublished", v.TargetPath+" (CSI driver "+v.Driver+", NodeUnpublishVolume)"))
	}
	for i := len(vols) - 1; i >= 0; i-- {
		v := vols[i]
		if !v.State.Published {
			volume.RemoveUnstagedDir(v)
		}
		if !v.State.Staged || v.State.Published {
			continue
		}
		if err := volume.UnstageCSI(ctx, e.opts.CSI, v); err != nil {
			errs = append(errs, err)
			continue
		}
		details = append(details, kv("unstaged", v.StagingPath+" (CSI driver "+v.Driver+", NodeUnstageVolume)"))
	}
	var left []*volume.CSIResult
	for _, v := range vols {
		if v.State.Published || v.State.Staged {
			left = append(left, v)
		}
	}
	e.mu.Lock()
	e.rt.csiVolumes = left
	e.mu.Unlock()
	return details, errors.Join(errs...)
}

// unmountDevices unmounts the block devices of local PersistentVolumes,
// once the pod's bind mounts of them are gone, as the reconciler's
// unmountDetachDevices does (the local plugin's UnmountDevice: unmount,
// remove the dir). One that fails stays listed.
func (e *Engine) unmountDevices() ([]Detail, error) {
	e.mu.Lock()
	dms := append([]*volume.DeviceMount(nil), e.rt.deviceMounts...)
	e.mu.Unlock()
	var details []Detail
	var errs []error
	var left []*volume.DeviceMount
	for _, dm := range dms {
		if err := volume.UnmountDevice(dm); err != nil {
			errs = append(errs, err)
			left = append(left, dm)
			continue
		}
		details = append(details, kv("unmounted", dm.Path+" ("+dm.Device+", "+dm.FSType+"; local volume UnmountDevice)"))
	}
	e.mu.Lock()
	e.rt.deviceMounts = left
	e.mu.Unlock()
	return details, errors.Join(errs...)
}

// Teardown plans the teardown steps (once) and runs every remaining step.
// Use a context that is not already cancelled: teardown must run after Ctrl-C.
func (e *Engine) Teardown(ctx context.Context) error {
	e.PlanTeardown()
	for {
		if _, err := e.Next(ctx); err != nil {
			if errors.Is(err, ErrNoStep) {
				_ = e.opts.CSI.Close() // the CSI drivers' connections (a later call dials again)
				return nil
			}
			return err
		}
	}
}

// plural says "1 container" or "2 containers".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
