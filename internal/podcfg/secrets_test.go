package podcfg

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSecretExpansions: every string the container config would send that
// holds a Secret value is reported with its masked form, through envFrom,
// secretKeyRef, a chain of $(VAR) references, command, args and
// subPathExpr; an empty Secret value and strings without Secrets are not.
func TestSecretExpansions(t *testing.T) {
	src := fakeEnv{secrets: map[string]*corev1.Secret{
		"ns/db":  {Data: map[string][]byte{"password": []byte("pw-123456"), "pin": []byte("4719"), "empty": nil}},
		"ns/api": {StringData: map[string]string{"TOKEN": "tok-abcdef"}},
	}}
	sel := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	c := &corev1.Container{
		Name: "app", Image: "busybox",
		Command: []string{"sh", "-c", "run --dsn=$(DSN)"},
		Args:    []string{"$(PIN)", "--token=$(API_TOKEN)", "$(POD_IP)", "$(EMPTY)"},
		EnvFrom: []corev1.EnvFromSource{{Prefix: "API_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api"}}}},
		Env: []corev1.EnvVar{
			{Name: "DB_PASSWORD", ValueFrom: sel("db", "password")},
			{Name: "PIN", ValueFrom: sel("db", "pin")},
			{Name: "EMPTY", ValueFrom: sel("db", "empty")},
			{Name: "DSN", Value: "postgres://u:$(DB_PASSWORD)@db"},
			{Name: "PLAIN", Value: "no secret here"},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPathExpr: "users/$(PIN)"}},
	}
	pod := podWith(*c)
	got := SecretExpansions(pod, &pod.Spec.Containers[0], envInput(&pod.Spec.Containers[0], src), Options{}, "<m>")
	var pairs []string
	for _, e := range got {
		p := e.Value + " → " + e.Shown
		if e.SubPath {
			p += " (subPath)"
		}
		pairs = append(pairs, p)
	}
	eq(t, "expansions", pairs, []string{
		"tok-abcdef → <m>",
		"pw-123456 → <m>",
		"4719 → <m>",
		"postgres://u:pw-123456@db → postgres://u:<m>@db",
		"run --dsn=postgres://u:pw-123456@db → run --dsn=postgres://u:<m>@db",
		"4719 → <m>",
		"--token=tok-abcdef → --token=<m>",
		"users/4719 → users/<m> (subPath)",
	})
	if n := len(SecretExpansions(pod, &pod.Spec.Containers[0], ContainerInput{Container: c}, Options{}, "<m>")); n != 0 {
		t.Errorf("without an env source: %d expansions, want 0", n)
	}
}
