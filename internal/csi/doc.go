// Package csi is podstep's client of a CSI driver's node service, and the
// order in which the kubelet's CSI volume plugin (pkg/volume/csi of
// Kubernetes v1.37) calls it: NodeGetCapabilities before each stage and
// publish, NodeStageVolume for a PersistentVolume whose driver stages,
// NodePublishVolume, and NodeUnpublishVolume / NodeUnstageVolume at
// teardown.
//
// Every call goes through internal/cri's Client (cri.Invoke), so it is
// recorded as a cri.Call of the running step: numbered with the CRI calls,
// redacted (the fields the CSI spec marks csi_secret are masked whole),
// timed, and shown by every frontend as the CRI calls are.
//
// A driver is found as the kubelet finds it, by the registration socket its
// node-driver-registrar puts in <root-dir>/plugins_registry (GetInfo of
// k8s.io/kubelet/pkg/apis/pluginregistration/v1), or given with
// --csi-endpoint DRIVER=unix://PATH.
package csi
