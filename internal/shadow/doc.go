// Package shadow starts a private instance of a node's container runtime
// (containerd 1.6 or 2.x) for a replay: the node's own binary, its config
// with only the paths changed (root, state, sockets, runc roots, CNI conf
// dir under podstep's dir), the node's runtimes and CNI plugins, and a
// private network cloned from the node's first CNI config. The node's
// kubelet watches its own runtime and removes what it does not know
// (kubelet_pods.go HandlePodCleanups → killing sandboxes of pods it does not
// know; cleanupOrphanedPodCgroups; cleanupOrphanedPodDirs): a replay on a
// shadow is out of its sight.
//
// Find names the node's runtime from its CRI endpoint; Watched says whether
// a kubelet uses it; Start derives the config (Derive, DeriveNetwork,
// FreeSubnet) and starts it; Shadow.Stop removes all of it (sandboxes,
// process, shims, mounts, netns, bridge, iptables rules, dirs); a podstep
// killed before Stop leaves a marker (shadow.json) that Leftovers finds and
// Remove uses (`podstep cleanup`).
//
// For the fleet's runner (a container with the host's PID and network
// namespaces but its own mount namespace): StartInHost starts the shadow
// from a helper (podstep's hidden HelperCommand, running Helper) in the
// mount namespace of the process serving the node's endpoint, the host's,
// so that Find and Start see the host's paths and the shadow's mounts are
// the host's; the helper removes the shadow when told, or when its runner
// is gone (its stdin closes).
package shadow
