package steps

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/credential"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/reason"
)

// pullSecretsStep mirrors Kubelet.getPullSecretsForPod (pkg/kubelet/kubelet_pods.go):
// the kubelet fetches each Secret named in imagePullSecrets; a missing one is
// only a warning, and the pull is tried anyway.
type pullSecretsStep struct{}

func (pullSecretsStep) mirrors() string {
	return "Kubelet.SyncPod → getPullSecretsForPod (pkg/kubelet/kubelet_pods.go); keyring lookup in pkg/credentialprovider/keyring.go"
}

func (pullSecretsStep) explain() string {
	return "The kubelet fetches the Secrets named in spec.imagePullSecrets. A Secret that cannot be found is a warning event (FailedToRetrieveImagePullSecret), not an error: the image pull is attempted without it. At pull time the image's registry is matched against the docker config entries of those Secrets."
}

func (pullSecretsStep) requests(*Engine) []Request { return nil }

func (pullSecretsStep) run(_ context.Context, e *Engine) Result {
	if len(e.pod.Spec.ImagePullSecrets) == 0 {
		return ok("the pod names no image pull secrets")
	}
	k := e.keyring()
	kr, missing := &k.kr, k.missing
	details := append([]Detail(nil), k.found...)
	warnings := append([]string(nil), k.warnings...)
	if len(missing) > 0 {
		msg := fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
		warnings = append(warnings, msg)
		e.tracker.Record(corev1.EventTypeWarning, reason.FailedToRetrieveImagePullSecret, "", msg)
	}
	var imgs []string
	for _, c := range e.rt.order {
		imgs = append(imgs, e.rt.containers[c].spec.Image)
	}
	for _, v := range e.pod.Spec.Volumes {
		if v.Image != nil { // image volumes are pulled with the same secrets (getImageVolumes)
			imgs = append(imgs, v.Image.Reference)
		}
	}
	for _, img := range imgs {
		if _, done := e.rt.authSource[img]; done {
			continue
		}
		hits := kr.Lookup(img)
		if len(hits) == 0 {
			e.rt.authSource[img] = "no credentials matched"
			details = append(details, kv(img, "no credentials matched; pulled anonymously"))
			continue
		}
		// The keyring's credentials carry only user, password and email: the
		// kubelet sends AuthConfig with an empty ServerAddress, and tries each
		// matching credential in turn until a pull succeeds.
		var srcs []string
		for _, h := range hits {
			e.rt.auth[img] = append(e.rt.auth[img], &runtimeapi.AuthConfig{Username: h.Username, Password: h.Password})
			srcs = append(srcs, fmt.Sprintf("secret %s, registry %q, user %s, password %s", h.Secret, h.Registry, h.Username, maskedLen(h.Password)))
		}
		src := strings.Join(srcs, "; then ")
		e.rt.authSource[img] = src
		details = append(details, kv(img, src))
	}
	with, without := 0, 0
	for img := range e.rt.authSource {
		if len(e.rt.auth[img]) > 0 {
			with++
		} else {
			without++
		}
	}
	summary := fmt.Sprintf("%s found; credentials matched for %d of %s", plural(len(e.pod.Spec.ImagePullSecrets)-len(missing), "secret", "secrets"), with, plural(with+without, "image", "images"))
	if without > 0 {
		summary += fmt.Sprintf(" (no credentials matched for %d: pulled anonymously)", without)
	}
	r := ok(summary, details...)
	r.Warnings = warnings
	return r
}

func maskedLen(p string) string {
	if p == "" {
		return "(empty)"
	}
	return "(set)"
}

// pullKeyring is the pod's image pull secrets read into a keyring, once:
// the manifest does not change during a run.
type pullKeyring struct {
	kr       credential.Keyring
	missing  []string // secrets named but not in the manifest
	found    []Detail // one per secret added
	warnings []string // secrets that could not be read
}

// keyring reads the pull secrets the first time it is asked (by the
// pull-secrets step, or by a plan showing the pull's credentials).
func (e *Engine) keyring() *pullKeyring {
	e.keyringOnce.Do(func() {
		k := &pullKeyring{}
		for _, ref := range e.pod.Spec.ImagePullSecrets {
			s, found := e.bundle.Secret(e.pod.Namespace, ref.Name)
			if !found {
				k.missing = append(k.missing, ref.Name)
				continue
			}
			if err := k.kr.Add(s); err != nil {
				k.warnings = append(k.warnings, err.Error())
				continue
			}
			what := "found (" + string(s.Type) + ")"
			if o := e.bundle.Origin(manifest.KindSecret, e.pod.Namespace, ref.Name); o != "" {
				what += " in " + o
			}
			k.found = append(k.found, kv("secret "+ref.Name, what))
		}
		e.pullKeys = k
	})
	return e.pullKeys
}

// plannedAuth is the credentials a pull of img will send: those the
// pull-secrets step matched, or, before it ran (a plan), the same lookup.
// The requests that show them are redacted.
func (e *Engine) plannedAuth(img string) []*runtimeapi.AuthConfig {
	if _, done := e.rt.authSource[img]; done {
		return e.rt.auth[img]
	}
	var out []*runtimeapi.AuthConfig
	for _, h := range e.keyring().kr.Lookup(img) {
		out = append(out, &runtimeapi.AuthConfig{Username: h.Username, Password: h.Password})
	}
	return out
}
