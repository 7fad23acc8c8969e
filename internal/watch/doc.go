// Package watch turns the CRI calls a real kubelet makes through
// `podstep proxy` into podstep's story of a pod: each call is decoded with
// cri-api, attributed to a pod (from RunPodSandbox's metadata and labels,
// then by sandbox and container ID) and to the step podstep's own engine
// would have made it in (run-sandbox, sandbox-status, pull/C, create/C,
// start/C, post-start/C, probe/C, relist, the teardown steps). Node-level
// polling (Version, Status, stats, unfiltered lists, image listing) is
// counted, not shown step by step.
//
// A [Pod] rebuilds the pod's state from the calls and their answers with
// internal/podstate, and emits the same steps.Event stream the engine does,
// so that report.Printer (`--auto`, `-o json`), record.Recorder
// (`--record`) and the TUI (a [Pod] is a tui.Engine) show a real kubelet
// exactly as they show `podstep run`. A [Hold] keeps the followed pod's
// calls from going upstream until released (`--hold`).
//
// What the kubelet does not say over the CRI, podstep infers, and says so
// in the step details: an init container is one whose successful exit was
// followed by the creation of the next container (the kubelet creates
// regular containers only after every init container completed,
// computePodActions in pkg/kubelet/kuberuntime/kuberuntime_manager.go), so
// a first init container that fails stays a "containers" step.
package watch
