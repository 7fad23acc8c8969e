package reason

// podstep's own reasons, for failures the kubelet has no reason word for
// (it logs an error, or marks the node NotReady, and tries again later).
// They are podstep's, not the kubelet's: do not look them up there.
const (
	// RuntimeUnavailable: the runtime does not answer (a Version or Status
	// call failed, or any call found its socket gone); exit code 3.
	RuntimeUnavailable = "RuntimeUnavailable"
	// RuntimeNotReady: the runtime reports RuntimeReady=false (the kubelet
	// would mark the node NotReady: "container runtime is down").
	RuntimeNotReady = "RuntimeNotReady"
	// PodAlreadyExists: a sandbox or pod dir with this pod's UID, kept by
	// an earlier podstep run, is in the way.
	PodAlreadyExists = "PodAlreadyExists"
	// FailedMakePodDataDirs: the pod's data dirs cannot be made (the
	// kubelet's SyncPod records a "Failed" event and returns the error).
	FailedMakePodDataDirs = "FailedMakePodDataDirs"
	// PodDirsKept: teardown kept the pod's dirs because the runtime did not
	// confirm its containers are gone.
	PodDirsKept = "PodDirsKept"
	// RemovePodSandboxError: teardown's RemovePodSandbox failed (the
	// kubelet's garbage collector only logs it and tries again).
	RemovePodSandboxError = "RemovePodSandboxError"
	// RemoveDirsError: teardown could not remove the pod's dirs.
	RemoveDirsError = "RemoveDirsError"
	// TeardownFailed: the run's summary when teardown left something behind.
	TeardownFailed = "TeardownFailed"
)
