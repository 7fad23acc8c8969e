// Package podstate models the pod's status the way the kubelet reports it
// after each sync: phase, conditions, init and regular container statuses,
// the `kubectl get pod` STATUS column, and the events the kubelet records.
//
// The engine tells a Tracker what happened (sandbox ready, container
// created, started, exited, waiting with a reason); the Tracker derives the
// rest as the kubelet's generateAPIPodStatus / getPhase
// (pkg/kubelet/kubelet_pods.go) and kubectl's printPod do.
//
// Between two snapshots (before and after a step), Diff says what changed
// as stable field paths and NewEvents which events were recorded;
// FormatChanges and FormatEvent say them on one line each, in the words of
// `kubectl get pod -w`, `kubectl describe pod` and `kubectl get events`.
package podstate
