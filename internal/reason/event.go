package reason

// Event reasons, from pkg/kubelet/events/event.go unless said otherwise.
// Several share a word: the kubelet's Go names say which event it is.
const (
	// CreatedContainer mirrors events.CreatedContainer.
	CreatedContainer = "Created"
	// StartedContainer mirrors events.StartedContainer.
	StartedContainer = "Started"
	// FailedToCreateContainer mirrors events.FailedToCreateContainer
	// ("Error: <reason>" when the image step or the create failed).
	FailedToCreateContainer = "Failed"
	// FailedToStartContainer mirrors events.FailedToStartContainer.
	FailedToStartContainer = "Failed"
	// KillingContainer mirrors events.KillingContainer.
	KillingContainer = "Killing"
	// BackOffStartContainer mirrors events.BackOffStartContainer: a
	// restart within the crash back-off.
	BackOffStartContainer = "BackOff"

	// PullingImage mirrors events.PullingImage.
	PullingImage = "Pulling"
	// PulledImage mirrors events.PulledImage (also "already present").
	PulledImage = "Pulled"
	// FailedToPullImage mirrors events.FailedToPullImage.
	FailedToPullImage = "Failed"
	// FailedToInspectImage mirrors events.FailedToInspectImage.
	FailedToInspectImage = "InspectFailed"
	// ErrImageNeverPullPolicy mirrors events.ErrImageNeverPullPolicy.
	ErrImageNeverPullPolicy = "ErrImageNeverPull"
	// BackOffPullImage mirrors events.BackOffPullImage.
	BackOffPullImage = "BackOff"

	// FailedMountVolume mirrors events.FailedMountVolume.
	FailedMountVolume = "FailedMount"
	// FailedCreatePodSandBox mirrors events.FailedCreatePodSandBox.
	FailedCreatePodSandBox = "FailedCreatePodSandBox"
	// NetworkNotReady mirrors events.NetworkNotReady; podstep also fails
	// the runtime-status step with it.
	NetworkNotReady = "NetworkNotReady"

	// ContainerUnhealthy mirrors events.ContainerUnhealthy: a probe failed.
	ContainerUnhealthy = "Unhealthy"
	// ContainerProbeWarning mirrors events.ContainerProbeWarning.
	ContainerProbeWarning = "ProbeWarning"

	// FailedPostStartHook mirrors events.FailedPostStartHook (also the
	// reason the kubelet kills the container with).
	FailedPostStartHook = "FailedPostStartHook"
	// FailedPreStopHook mirrors events.FailedPreStopHook.
	FailedPreStopHook = "FailedPreStopHook"

	// FailedToRetrieveImagePullSecret is the event Kubelet.SyncPod
	// records for a missing pull secret (a literal in pkg/kubelet/kubelet.go).
	FailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"
	// LifecycleHTTPFallback is the event of an https hook answered in
	// plain HTTP (a literal in pkg/kubelet/lifecycle/handlers.go).
	LifecycleHTTPFallback = "LifecycleHTTPFallback"
	// MissingClusterDNS and DNSConfigForming are the DNS configurer's
	// events (literals in pkg/kubelet/network/dns/dns.go).
	MissingClusterDNS = "MissingClusterDNS"
	// DNSConfigForming: see MissingClusterDNS.
	DNSConfigForming = "DNSConfigForming"
)
