package watch

import (
	"github.com/podstep/podstep/internal/steps"
)

// description is what a step of one kind is called and which kubelet code
// sends its calls (kubelet v1.37.0).
type description struct {
	name, title, mirrors, explain string
	stage                         steps.Stage
}

// describe names the step of kind for container, as `podstep run` names
// its own (steps.Kind), with the kubelet function whose calls it holds.
func describe(kind steps.Kind, container string) description {
	d := description{name: kind.String(), stage: steps.StageContainers}
	if kind.PerContainer() && container != "" {
		d.name += "/" + container
	}
	switch kind {
	case steps.KindRunSandbox:
		d.stage, d.title = steps.StageSandbox, "RunPodSandbox"
		d.mirrors = "createPodSandbox (pkg/kubelet/kuberuntime/kuberuntime_sandbox.go)"
		d.explain = "SyncPod asks the runtime for the pod's sandbox: its namespaces, cgroup and network (CNI)."
	case steps.KindSandboxStatus:
		d.stage, d.title = steps.StageSandbox, "PodSandboxStatus of the new sandbox"
		d.mirrors = "SyncPod (pkg/kubelet/kuberuntime/kuberuntime_manager.go)"
		d.explain = "SyncPod reads the new sandbox's status for the pod IPs the containers' environment needs."
	case steps.KindPull:
		d.title = "ensure the image"
		d.mirrors = "EnsureImageExists (pkg/kubelet/images/image_manager.go)"
		d.explain = "The image manager asks whether the image is present (ImageStatus) and pulls it if the policy says so; startContainer reads it again for the image's user."
	case steps.KindCreate:
		d.title = "CreateContainer " + container
		d.mirrors = "startContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go)"
		d.explain = "startContainer creates the container in the sandbox from the config generateContainerConfig built."
	case steps.KindStart:
		d.title = "StartContainer " + container
		d.mirrors = "startContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go)"
		d.explain = "startContainer starts the created container."
	case steps.KindPostStart:
		d.stage, d.title = steps.StagePostStart, "postStart hook of "+container
		d.mirrors = "startContainer → handlerRunner.Run (pkg/kubelet/lifecycle/handlers.go)"
		d.explain = "Right after StartContainer, startContainer runs the postStart exec hook with ExecSync and waits for it."
	case steps.KindReady:
		d.name = "probe/" + container
		d.stage, d.title = steps.StageReady, "exec probe of "+container
		d.mirrors = "prober.runProbe (pkg/kubelet/prober/prober.go)"
		d.explain = "A probe worker runs the container's exec probe with ExecSync."
	case steps.KindRelist:
		d.title = "relist"
		d.mirrors = "GenericPLEG.Relist (pkg/kubelet/pleg/generic.go), GetPodStatus (kuberuntime_manager.go)"
		d.explain = "The kubelet reads the pod's sandbox and containers back (pod-filtered lists and statuses) to see what changed."
	case steps.KindStopContainers:
		d.stage, d.title = steps.StageTeardown, "StopContainer"
		d.mirrors = "killPodWithSyncResult → killContainersWithSyncResult (pkg/kubelet/kuberuntime/kuberuntime_manager.go, kuberuntime_container.go)"
		d.explain = "The pod is being killed: each container is stopped with its grace period."
	case steps.KindStopSandbox:
		d.stage, d.title = steps.StageTeardown, "StopPodSandbox"
		d.mirrors = "killPodWithSyncResult (pkg/kubelet/kuberuntime/kuberuntime_manager.go)"
		d.explain = "After its containers, the sandbox is stopped (its network torn down)."
	case steps.KindRemoveContainers:
		d.stage, d.title = steps.StageTeardown, "RemoveContainer"
		d.mirrors = "containerGC / podContainerDeletor (pkg/kubelet/kuberuntime/kuberuntime_gc.go, pkg/kubelet/pod_container_deletor.go)"
		d.explain = "Dead containers are removed by the container garbage collector (or pruned while the pod runs)."
	case steps.KindRemoveSandbox:
		d.stage, d.title = steps.StageTeardown, "RemovePodSandbox"
		d.mirrors = "containerGC.evictSandboxes (pkg/kubelet/kuberuntime/kuberuntime_gc.go)"
		d.explain = "The garbage collector removes the stopped sandbox of a pod that is gone."
	}
	return d
}
