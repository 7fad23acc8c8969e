// Package fleet is `podstep fleet`: one pod replayed on many nodes of a
// cluster, each by a runner pod that Kubernetes itself schedules onto the
// node (spec.nodeName, as `kubectl debug node` does), running
// `podstep run --auto -o json` against the node's own runtime, and the
// nodes' results compared.
//
// Three parts:
//
//   - the runner (runner.go, configz.go): the ConfigMap holding the
//     manifest and the node's settings, and the privileged pod pinned to
//     the node, with the node's runtime socket and podstep's own root and
//     log dirs (per node: nodes that share a host never collide) as
//     hostPaths; every object is owned by one parent ConfigMap
//     (ownerReferences + the podstep.dev/fleet label), so the garbage
//     collector removes what a killed podstep left;
//   - the orchestration (fleet.go, cleanup.go): create the runners, at most
//     Concurrency at once, stream their logs, report nodes whose runner
//     never starts within Timeout, delete everything at the end or on
//     Ctrl-C;
//   - the analysis (result.go, analyze.go, table.go), pure code over the
//     runners' JSON outputs: nodes grouped by their sequence of step
//     outcomes and reasons, the odd nodes named with the first step where
//     they differ from the majority and the field difference of that
//     step's requests (internal/diff), and per-stage time outliers.
package fleet
