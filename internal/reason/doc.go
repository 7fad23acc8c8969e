// Package reason names every reason podstep reports: the short CamelCase
// words of a container's Waiting reason, a failed step's reason, a pod
// condition's reason, an admission rejection and an event's reason.
//
// Most are the kubelet's, spelled as it spells them, and each constant says
// which kubelet name it mirrors and where that is (v1.37), so that a reader
// can look it up: the sync errors of pkg/kubelet/container/sync_result.go,
// pkg/kubelet/images/types.go and pkg/kubelet/kuberuntime, the event reasons
// of pkg/kubelet/events/event.go, the condition reasons of
// pkg/kubelet/status/generate.go. The constants keep the kubelet's Go names
// (ErrImageInspect is "ImageInspectError", FailedToPullImage is "Failed").
// podstep's own reasons, for what the kubelet has no word for, are in
// podstep.go and say so.
//
// Code compares and records reasons through these constants only; a
// reason literal elsewhere is a bug waiting to happen (a typo is a reason
// no user can look up).
package reason
