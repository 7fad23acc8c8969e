package cri

import (
	"fmt"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// benchRequest is a CreateContainerRequest with 50 env vars, 10 of them
// from Secrets, one of which is also expanded into args; it returns the
// Secret-sourced names and values too.
func benchRequest() (*runtimeapi.CreateContainerRequest, []string, []string) {
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: "app"},
		Image:       &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"},
		Command:     []string{"sh", "-c"},
		Args:        []string{"exec /app --dsn=postgres://u:Secret-Value-0003@db --verbose"},
		Labels:      map[string]string{"io.kubernetes.pod.name": "bench", "io.kubernetes.container.name": "app"},
		Annotations: map[string]string{"io.kubernetes.container.hash": "85580d84", "io.kubernetes.container.restartCount": "0"},
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/var/lib/podstep/pods/uid/volumes/kubernetes.io~empty-dir/data"}},
		LogPath:     "app/0.log",
	}
	var names, values []string
	for i := 0; i < 50; i++ {
		k, v := fmt.Sprintf("VAR_%02d", i), fmt.Sprintf("plain-value-number-%02d", i)
		if i < 10 {
			k, v = fmt.Sprintf("SECRET_%02d", i), fmt.Sprintf("Secret-Value-%04d", i)
			names, values = append(names, k), append(values, v)
		}
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	return &runtimeapi.CreateContainerRequest{PodSandboxId: "sandbox", Config: cfg}, names, values
}

// BenchmarkRedactCreateContainer: Redact of a CreateContainerRequest with
// 50 env vars, 10 of them from Secrets (masked by name and by value).
func BenchmarkRedactCreateContainer(b *testing.B) {
	req, names, values := benchRequest()
	r := &Redactor{}
	r.AddSecretEnv(names...)
	r.AddSecrets(values...)
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(req)
	}
}

// BenchmarkRedactText: Text of a 200-byte log line that holds no secret,
// with 10 secrets known.
func BenchmarkRedactText(b *testing.B) {
	_, _, values := benchRequest()
	r := &Redactor{}
	r.AddSecrets(values...)
	line := strings.Repeat("2026-05-01T10:00:00Z stdout F connecting to db at 10.88.0.7:5432 as app ", 3)[:200]
	b.ReportAllocs()
	for b.Loop() {
		r.Text(line)
	}
}
