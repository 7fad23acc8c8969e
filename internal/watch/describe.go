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
	d := description{name: kind.String(), stage: steps.StageContainers, mirrors: kind.Mirrors()}
	if kind.PerContainer() && container != "" {
		d.name += "/" + container
	}
	switch kind {
	case steps.KindRunSandbox:
		d.stage, d.title = steps.StageSandbox, "RunPodSandbox"
		d.explain = "SyncPod asks the runtime for the pod's sandbox: its namespaces, cgroup and network (CNI)."
	case steps.KindSandboxStatus:
		d.stage, d.title = steps.StageSandbox, "PodSandboxStatus of the new sandbox"
		d.explain = "SyncPod reads the new sandbox's status for the pod IPs the containers' environment needs."
	case steps.KindPull:
		d.title = "ensure the image"
		d.explain = "The image manager asks whether the image is present (ImageStatus) and pulls it if the policy says so; startContainer reads it again for the image's user."
	case steps.KindCreate:
		d.title = "CreateContainer " + container
		d.explain = "startContainer creates the container in the sandbox from the config generateContainerConfig built."
	case steps.KindStart:
		d.title = "StartContainer " + container
		d.explain = "startContainer starts the created container."
	case steps.KindPostStart:
		d.stage, d.title = steps.StagePostStart, "postStart hook of "+container
		d.explain = "Right after StartContainer, startContainer runs the postStart exec hook with ExecSync and waits for it."
	case steps.KindReady:
		d.name = "probe/" + container
		d.stage, d.title = steps.StageReady, "exec probe of "+container
		d.explain = "A probe worker runs the container's exec probe with ExecSync."
	case steps.KindRelist:
		d.title = "relist"
		d.explain = "The kubelet reads the pod's sandbox and containers back (pod-filtered lists and statuses) to see what changed."
	case steps.KindStopContainers:
		d.stage, d.title = steps.StageTeardown, "StopContainer"
		d.explain = "The pod is being killed: each container is stopped with its grace period."
	case steps.KindStopSandbox:
		d.stage, d.title = steps.StageTeardown, "StopPodSandbox"
		d.explain = "After its containers, the sandbox is stopped (its network torn down)."
	case steps.KindRemoveContainers:
		d.stage, d.title = steps.StageTeardown, "RemoveContainer"
		d.explain = "Dead containers are removed by the container garbage collector (or pruned while the pod runs)."
	case steps.KindVolumes:
		d.stage, d.title = steps.StageVolumes, "CSI volume"
		d.explain = "The volume manager mounts the pod's CSI volume through the driver's node service: csiAttacher.MountDevice stages a PersistentVolume (NodeStageVolume, shared by the pods of the volume), csiMountMgr.SetUpAt publishes it for the pod (NodePublishVolume), each after NodeGetCapabilities (pkg/volume/csi)."
	case steps.KindRemoveDirs:
		d.stage, d.title = steps.StageTeardown, "CSI volume teardown"
		d.explain = "The volume manager unmounts the pod's CSI volume: csiMountMgr.TearDownAt (NodeUnpublishVolume), then csiAttacher.UnmountDevice once no pod uses it (NodeGetCapabilities, NodeUnstageVolume) (pkg/volume/csi)."
	case steps.KindRemoveSandbox:
		d.stage, d.title = steps.StageTeardown, "RemovePodSandbox"
		d.explain = "The garbage collector removes the stopped sandbox of a pod that is gone."
	}
	return d
}
