// Package gate holds the kubelet v1.37 feature gates that change what
// podstep does, with their v1.37 defaults (pkg/features/kube_features.go),
// and reads the kubelet's --feature-gates syntax ("A=true,B=false").
//
// Only gates podstep looks at are known; naming another is an error, as the
// kubelet refuses an unknown gate. Each gate's comment says what podstep does
// when it is off.
package gate
