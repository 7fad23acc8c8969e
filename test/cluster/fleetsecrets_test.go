//go:build cluster

package cluster

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

// TestFleetSecretsInCluster: a fleet of a pod with a Secret env and a
// ConfigMap volume, both only in the cluster, passes on both nodes: each
// runner reads them from the API server itself (--in-cluster, the runner
// service account of deploy/fleet.yaml); the container checks it got the
// Secret's value and the ConfigMap's file. The Secret's value is in no
// output, no recording and no ConfigMap the fleet made (every version of
// every ConfigMap in the fleet's namespace is watched during the run).
func TestFleetSecretsInCluster(t *testing.T) {
	e := newFleetEnv(t)
	e.annotateReplay(t)
	ctx := context.Background()
	ns := fmt.Sprintf("podstep-fs-%06d", rand.IntN(1000000))
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	password := fmt.Sprintf("fleet-pw-%016x", rand.Uint64())
	if _, err := e.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Data: map[string][]byte{"password": []byte(password)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"greeting": "hello from the cluster"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The container exits 0 only with the Secret's value (its length: the
	// value itself is in no manifest) and the ConfigMap's file.
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "secretive", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "app", Image: busybox, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-c", fmt.Sprintf(`[ ${#PASSWORD} -eq %d ] && [ "$(cat /etc/conf/greeting)" = "hello from the cluster" ] && sleep 300`, len(password))},
			Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/conf"}},
		}}, Volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}},
	}
	data, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}

	// Every ConfigMap version in the fleet's namespace, while the fleet runs.
	w, err := e.cs.CoreV1().ConfigMaps(fleetNS).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []string
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type != watch.Deleted {
				b, _ := yaml.Marshal(cm)
				mu.Lock()
				seen = append(seen, string(b))
				mu.Unlock()
			}
		}
	}()
	rec := t.TempDir()
	rep, stderr, code := e.run(t, "-f", file, "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m",
		"--run-flag=--settle=2s", "--record", rec)
	w.Stop()
	<-done
	if code != 0 || len(rep.Nodes) != 2 {
		t.Fatalf("exit %d, %d nodes; stderr:\n%s", code, len(rep.Nodes), stderr)
	}
	for _, n := range rep.Nodes {
		if n.Status != "ran" || n.Summary == nil || n.Summary.Outcome != "running" {
			t.Errorf("node %s: %s %+v %s; steps %+v", n.Node, n.Status, n.Summary, n.Error, n.Steps)
		}
	}
	mu.Lock()
	manifests := 0
	for _, cm := range seen {
		if strings.Contains(cm, password) {
			t.Errorf("a ConfigMap of the fleet holds the Secret's value")
		}
		if strings.Contains(cm, "name: db") {
			manifests++
		}
	}
	mu.Unlock()
	if manifests == 0 {
		t.Error("no manifest ConfigMap was seen (the watch saw nothing)")
	}
	outputs := map[string]string{"stderr": stderr, "stdout": rep.raw}
	ents, _ := os.ReadDir(rec)
	if len(ents) != 2 {
		t.Errorf("--record: %d recordings, want one per node", len(ents))
	}
	for _, ent := range ents {
		f, err := os.Open(filepath.Join(rec, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", ent.Name(), err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", ent.Name(), err)
		}
		outputs[ent.Name()] = string(b)
	}
	for name, out := range outputs {
		if strings.Contains(out, password) {
			t.Errorf("%s holds the Secret's value", name)
		}
	}
	e.nothingLeft(t)
	e.nothingOnRuntimes(t, e.wantReplayRows(t, rep))
}
