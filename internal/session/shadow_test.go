package session

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/manifest"
)

func TestCheckShadow(t *testing.T) {
	for _, tt := range []struct {
		mode string
		sim  bool
		want string // "" for no error
	}{
		{"", false, ""}, {"auto", false, ""}, {"always", false, ""}, {"never", false, ""},
		{"auto", true, ""}, {"never", true, ""},
		{"always", true, "--sim and --shadow=always conflict"},
		{"yes", false, `--shadow "yes": expected auto, always or never`},
		{"Always", false, "expected auto, always or never"},
	} {
		err := CheckShadow(tt.mode, tt.sim)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckShadow(%q, sim %v) = %v, want nil", tt.mode, tt.sim, err)
			}
			continue
		}
		var e *Error
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &e) || e.Code != ExitUsage {
			t.Errorf("CheckShadow(%q, sim %v) = %v, want exit 2 saying %q", tt.mode, tt.sim, err, tt.want)
		}
	}
}

func TestPodImages(t *testing.T) {
	b := &manifest.Bundle{Pod: &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Image: "init:1"}},
		Containers:     []corev1.Container{{Image: "app:1"}, {Image: "side:2"}},
	}}}
	if got := strings.Join(PodImages(b), ","); got != "init:1,app:1,side:2" {
		t.Errorf("PodImages = %s", got)
	}
}
