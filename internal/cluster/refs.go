package cluster

import (
	corev1 "k8s.io/api/core/v1"
)

// ref is one object a pod references.
type ref struct {
	kind string // manifest.KindConfigMap or manifest.KindSecret
	name string
}

// references lists, once each and in spec order, the ConfigMaps and
// Secrets the kubelet fetches for pod through its configmap and secret
// managers: those of volumes (configMap, secret, projected sources;
// pkg/volume/configmap, secret and projected SetUpAt), of env valueFrom and
// envFrom of every container, init containers included (kubelet_pods.go
// makeEnvironmentVariables), and the imagePullSecrets
// (kubelet_pods.go getPullSecretsForPod). kube-root-ca.crt is the
// ConfigMap of the default kube-api-access projected volume.
func references(pod *corev1.Pod) []ref {
	var out []ref
	seen := map[ref]bool{}
	add := func(kind, name string) {
		r := ref{kind, name}
		if name == "" || seen[r] {
			return
		}
		seen[r] = true
		out = append(out, r)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("ConfigMap", v.ConfigMap.Name)
		case v.Secret != nil:
			add("Secret", v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					add("ConfigMap", s.ConfigMap.Name)
				case s.Secret != nil:
					add("Secret", s.Secret.Name)
				}
			}
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, f := range c.EnvFrom {
				switch {
				case f.ConfigMapRef != nil:
					add("ConfigMap", f.ConfigMapRef.Name)
				case f.SecretRef != nil:
					add("Secret", f.SecretRef.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				switch {
				case e.ValueFrom.ConfigMapKeyRef != nil:
					add("ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name)
				case e.ValueFrom.SecretKeyRef != nil:
					add("Secret", e.ValueFrom.SecretKeyRef.Name)
				}
			}
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add("Secret", s.Name)
	}
	return out
}

// tokenProjections lists the pod's serviceAccountToken projections.
func tokenProjections(pod *corev1.Pod) []*corev1.ServiceAccountTokenProjection {
	var out []*corev1.ServiceAccountTokenProjection
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				out = append(out, s.ServiceAccountToken)
			}
		}
	}
	return out
}
