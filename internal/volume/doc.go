// Package volume sets up a pod's volumes the way the kubelet's volume
// plugins do (pkg/volume/...), on this machine's disk:
//
//   - emptyDir      pods/<uid>/volumes/kubernetes.io~empty-dir/<name>, mode 0777;
//     medium Memory is a tmpfs (emptydir.go setupTmpfs)
//   - configMap     kubernetes.io~configmap, written by the atomic writer
//   - secret        kubernetes.io~secret, on a tmpfs, atomic writer
//   - downwardAPI   kubernetes.io~downward-api, on a tmpfs, atomic writer
//   - projected     kubernetes.io~projected, on a tmpfs, atomic writer
//   - hostPath      the host path itself, after the kubelet's type check
//
// Every other volume type fails with FailedMount and says what it would need.
//
// Setup is two phases so that a pod whose volumes cannot all be set up
// leaves nothing behind: Host.Prepare resolves everything a volume needs
// (ConfigMaps, Secrets, keys, downward API fields, the hostPath type check)
// without writing anything, and Prepared.Apply makes it on disk.
//
// Errors are *Error, whose text is the kubelet's FailedMount event message:
//
//	MountVolume.SetUp failed for volume "x" : configmap "y" not found
//
// Host.PrepareSubPath makes a container's subPath mount safe as the
// kubelet's makeMounts does (pkg/volume/util/subpath): it must resolve
// inside its volume, is opened without following symlinks, and is
// bind-mounted under <pod dir>/volume-subpaths, the host path the runtime
// gets.
//
// TeardownPod unmounts what PrepareSubPath and Setup mounted (subPath bind
// mounts, tmpfs) under a pod dir; call it before removing the pod dir.
// Teardown does the tmpfs part only, under a pod's volumes dir.
package volume
