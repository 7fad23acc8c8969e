package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/node"
)

const nodeFactsPod = `
apiVersion: v1
kind: Pod
metadata: {name: facts}
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: [sh, -c, sleep 3600]
    resources: {requests: {memory: 64Mi}}
    env:
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    - name: MEM
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    - name: EPH
      valueFrom: {resourceFieldRef: {resource: limits.ephemeral-storage, divisor: 1Gi}}
    volumeMounts:
    - {name: podinfo, mountPath: /etc/podinfo}
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - path: mem
        resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}
`

const nodeFactsNode = `
apiVersion: v1
kind: Node
metadata: {name: worker-7}
status:
  capacity: {cpu: "2", memory: 1Gi, ephemeral-storage: 20Gi, pods: "110"}
  allocatable: {cpu: "1", memory: 768Mi, ephemeral-storage: 18Gi, pods: "110"}
`

// TestNodeReachesConfigsAndVolumes: the node the engine is given (as
// podstep run gives it the --node or manifest Node) is the one the CRI
// configs and volumes use: spec.nodeName is its name, a missing limit in
// the downward API is its allocatable (env and downwardAPI volume alike,
// defaultPodLimitsForDownwardAPI, GetNodeAllocatable), not this machine's.
func TestNodeReachesConfigsAndVolumes(t *testing.T) {
	n, err := node.Parse("node.yaml", []byte(nodeFactsNode))
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions(t)
	o.Node = n
	b := parse(t, nodeFactsPod)
	e, podDir := runWithVolumes(t, b, o)
	req := lastCreateContainer(t, e)
	var env []string
	for _, kv := range req.Config.Envs {
		env = append(env, kv.Key+"="+string(kv.Value))
	}
	if got, want := strings.Join(env, " "), "NODE=worker-7 MEM=768 EPH=18"; got != want {
		t.Errorf("env %s, want %s", got, want)
	}
	// Burstable, 64Mi requested of the node's 1Gi capacity: 1000 - 62 = 938.
	if got := req.Config.Linux.Resources.OomScoreAdj; got != 938 {
		t.Errorf("oom_score_adj %d, want 938", got)
	}
	data, err := os.ReadFile(filepath.Join(podDir, "volumes", "kubernetes.io~downward-api", "podinfo", "mem"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "768" {
		t.Errorf("downwardAPI mem = %q, want 768", data)
	}
}

// lastCreateContainer is the last CreateContainer request the engine sent.
func lastCreateContainer(t *testing.T, e *Engine) *runtimeapi.CreateContainerRequest {
	t.Helper()
	var req *runtimeapi.CreateContainerRequest
	for _, s := range e.Steps() {
		for _, c := range s.Calls {
			if r, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
				req = r
			}
		}
	}
	if req == nil {
		t.Fatal("no CreateContainer call")
	}
	return req
}
