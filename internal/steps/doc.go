// Package steps is podstep's engine. It turns a pod manifest into the
// ordered plan of steps the kubelet goes through to create the pod
// (SyncPod in pkg/kubelet/kubelet.go, then kubeGenericRuntimeManager.SyncPod
// in pkg/kubelet/kuberuntime/kuberuntime_manager.go), runs them one at a
// time against a CRI runtime through internal/cri, and streams events with
// the pod's state after every step.
//
// The engine is the only part of podstep that talks to the runtime;
// frontends (the TUI, the --auto printer) call Next, Continue, Retry and
// Teardown, and render the events they Subscribe to. Stages, in order:
//
//	admit → dirs → volumes → pull-secrets → sandbox → init → containers ⇄ post-start → (teardown)
//
// Each stage lives in its own file and names the kubelet function it mirrors.
package steps
