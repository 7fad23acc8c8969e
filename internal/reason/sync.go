package reason

// Container waiting reasons and the sync errors the kubelet turns into them:
// a failed step's reason, and the Waiting reason of the container it is
// about (SyncResult.Error, kept by the ReasonCache, pkg/kubelet/kubelet_pods.go).
const (
	// ContainerCreating is the Waiting reason of a container not yet
	// started (ContainerCreating, pkg/kubelet/kubelet_pods.go).
	ContainerCreating = "ContainerCreating"
	// PodInitializing is ContainerCreating while init containers run
	// (PodInitializing, pkg/kubelet/kubelet_pods.go).
	PodInitializing = "PodInitializing"

	// ErrCreatePodSandbox mirrors kubecontainer.ErrCreatePodSandbox
	// (pkg/kubelet/container/sync_result.go).
	ErrCreatePodSandbox = "CreatePodSandboxError"
	// ErrKillPodSandbox mirrors kubecontainer.ErrKillPodSandbox.
	ErrKillPodSandbox = "KillPodSandboxError"
	// ErrRunContainer mirrors kubecontainer.ErrRunContainer: StartContainer failed.
	ErrRunContainer = "RunContainerError"
	// ErrKillContainer mirrors kubecontainer.ErrKillContainer.
	ErrKillContainer = "KillContainerError"
	// ErrRemoveContainer mirrors kubecontainer.ErrRemoveContainer.
	ErrRemoveContainer = "RemoveContainerError"
	// ErrCrashLoopBackOff mirrors kubecontainer.ErrCrashLoopBackOff: a
	// restart within the back-off.
	ErrCrashLoopBackOff = "CrashLoopBackOff"

	// ErrImagePullBackOff mirrors images.ErrImagePullBackOff
	// (pkg/kubelet/images/types.go): a pull retried within its back-off.
	ErrImagePullBackOff = "ImagePullBackOff"
	// ErrImageInspect mirrors images.ErrImageInspect: ImageStatus failed.
	ErrImageInspect = "ImageInspectError"
	// ErrImagePull mirrors images.ErrImagePull.
	ErrImagePull = "ErrImagePull"
	// ErrImageNeverPull mirrors images.ErrImageNeverPull: an absent image
	// with pull policy Never.
	ErrImageNeverPull = "ErrImageNeverPull"
	// ErrInvalidImageName mirrors images.ErrInvalidImageName: the image
	// name does not parse (applyDefaultImageTag), before any CRI call.
	ErrInvalidImageName = "InvalidImageName"

	// ErrCreateContainerConfig mirrors kuberuntime.ErrCreateContainerConfig
	// (pkg/kubelet/kuberuntime/kuberuntime_container.go): the container
	// config cannot be built (a missing ConfigMap key, a bad subPath, ...).
	ErrCreateContainerConfig = "CreateContainerConfigError"
	// ErrCreateContainer mirrors kuberuntime.ErrCreateContainer:
	// CreateContainer failed.
	ErrCreateContainer = "CreateContainerError"
	// ErrPostStartHook mirrors kuberuntime.ErrPostStartHook.
	ErrPostStartHook = "PostStartHookError"
)

// Reasons a CRI runtime gives a terminated container (containerd's and
// CRI-O's words; the kubelet passes them on), and the one kubectl adds.
const (
	// Completed is the reason of a container that exited 0.
	Completed = "Completed"
	// Error is the reason of a container that exited non-zero. podstep
	// also gives it to an exit the runtime gave no reason for, and to a
	// relist or init wait that a CRI error ended.
	Error = "Error"
	// NotReady is what kubectl's printPod shows for a Completed container
	// while another still runs (pkg/printers/internalversion/printers.go).
	NotReady = "NotReady"
)

// Pod condition reasons (pkg/kubelet/status/generate.go).
const (
	// PodCompleted mirrors status.PodCompleted: every container terminated
	// (Initialized=True; Ready=False once the pod succeeded).
	PodCompleted = "PodCompleted"
	// PodFailed mirrors status.PodFailed: the pod failed (Ready=False).
	PodFailed = "PodFailed"
	// ContainersNotReady mirrors status.ContainersNotReady.
	ContainersNotReady = "ContainersNotReady"
	// ContainersNotInitialized mirrors status.ContainersNotInitialized.
	ContainersNotInitialized = "ContainersNotInitialized"
)

// RestartAllContainersStarted is the reason of the AllContainersRestarting
// condition once a container exited with a RestartAllContainers rule
// (RestartAllContainersStarted in pkg/kubelet/status/generate.go).
const RestartAllContainersStarted = "RestartAllContainersStarted"

// RestartingAllContainers is the waiting reason (and last termination
// reason) of a container the kubelet removed to restart the whole pod in
// place (RestartingAllContainers in pkg/kubelet/kubelet_pods.go).
const RestartingAllContainers = "RestartingAllContainers"
