package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const nodeTestPod = `apiVersion: v1
kind: Pod
metadata: {name: facts}
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    env:
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    - name: MEM
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
`

const nodeTestNode = `apiVersion: v1
kind: Node
metadata: {name: worker-7}
status:
  capacity: {cpu: "2", memory: 1Gi}
  allocatable: {cpu: "1", memory: 768Mi}
`

// TestPlanNode: `podstep plan` builds the configs for the node `run` would
// use: --node, else the manifest's Node. Its name is spec.nodeName and its
// allocatable the downward API's default limits; a bad --node is exit 2.
func TestPlanNode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pod := write("pod.yaml", nodeTestPod)
	nodeFile := write("node.yaml", nodeTestNode)
	withNode := write("pod-node.yaml", nodeTestPod+"---\n"+strings.ReplaceAll(nodeTestNode, "worker-7", "from-manifest"))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--node", []string{"-f", pod, "--node", nodeFile}, "NODE=worker-7 MEM=768"},
		{"manifest Node", []string{"-f", withNode}, "NODE=from-manifest MEM=768"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crictl := filepath.Join(t.TempDir(), "crictl")
			code, _, errOut := run(t, append([]string{"plan", "--crictl", crictl}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			data, err := os.ReadFile(filepath.Join(crictl, "app-container-config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				Envs []struct{ Key, Value string }
			}
			if err := json.Unmarshal(data, &cfg); err != nil {
				t.Fatal(err)
			}
			var env []string
			for _, kv := range cfg.Envs {
				env = append(env, kv.Key+"="+kv.Value)
			}
			if got := strings.Join(env, " "); got != tc.want {
				t.Errorf("env %s, want %s", got, tc.want)
			}
		})
	}
	if code, _, errOut := run(t, "plan", "-f", pod, "--node", filepath.Join(dir, "missing.yaml")); code != 2 || !strings.Contains(errOut, "--node") {
		t.Errorf("missing --node file: exit %d, %q; want 2 naming --node", code, errOut)
	}
}
