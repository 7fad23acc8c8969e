//go:build cluster

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestPodNodeConfigz: run --pod and plan --pod take the pod's node's
// kubelet settings from its configz through the API server (cluster-up.sh's
// kubelets have clusterDNS 10.96.0.10, clusterDomain cluster.local, their
// own cgroupRoot): the sandbox's DNS config is the node's, with no
// MissingClusterDNS, and the step says it came from configz of that node. A
// kubeconfig bound only to deploy/clusterrole.yaml's role reads it; one
// whose role lacks get nodes/proxy gets one warning and podstep's defaults
// (the host's resolv.conf). The run is on a runtime no kubelet watches.
func TestPodNodeConfigz(t *testing.T) {
	e := pcSetup(t)
	if len(e.nodes) == 0 {
		pcNeed(t, "PODSTEP_NODE_16/_2 name no node (hack/cluster-up.sh)")
	}
	node := e.nodes[0].name
	ns := e.pcNamespace(t)
	e.pcObjects(t, ns)
	e.pcCreatePod(t, ns, apiPod("web", node))
	const dns = `"servers":["10.96.0.10"]`
	src := "from configz of node " + node

	role := pcClusterRole(t)
	e.pcBind(t, ns, "podstep", role.Rules)
	r := e.pcRun(t, "plan", "-o", "json", "--kubeconfig", e.pcKubeconfigFor(t, ns, "podstep"), "--pod", ns+"/web")
	if r.code != 0 || !strings.Contains(r.stdout, dns) || !strings.Contains(r.stderr, "clusterDNS 10.96.0.10, clusterDomain cluster.local") ||
		strings.Contains(r.stderr, "warning") {
		t.Errorf("plan with deploy/clusterrole.yaml: exit %d; want the node's DNS (%s) and no warning", r.code, dns)
	}
	// The fetched line counts the configz request and names it: pod, 2
	// ConfigMaps, 1 Secret (apiPod's), the namespace's Services,
	// default/kubernetes, the Node, its pods, configz (plan: no token).
	if !strings.Contains(r.stderr, "(9 requests)") || !strings.Contains(r.stderr, "configz of node "+node) {
		t.Errorf("plan: the fetched line does not count and name the configz request (9 requests): %s", r.stderr)
	}

	var less []rbacv1.PolicyRule
	for _, rule := range role.Rules {
		if len(rule.Resources) == 1 && rule.Resources[0] == "nodes/proxy" {
			continue
		}
		less = append(less, rule)
	}
	if len(less) != len(role.Rules)-1 {
		t.Fatal("deploy/clusterrole.yaml has no rule for nodes/proxy alone")
	}
	e.pcBind(t, ns, "noproxy", less)
	r = e.pcRun(t, "plan", "-o", "json", "--kubeconfig", e.pcKubeconfigFor(t, ns, "noproxy"), "--pod", ns+"/web")
	if r.code != 0 || strings.Contains(r.stdout, dns) || strings.Count(r.stderr, "warning") != 1 ||
		!strings.Contains(r.stderr, `denied "get" on "nodes/proxy"`) {
		t.Errorf("plan without nodes/proxy: exit %d; want exit 0, one warning naming nodes/proxy, and not the node's DNS", r.code)
	}

	ep := os.Getenv("PODSTEP_REPLAY_ENDPOINT_16")
	if ep == "" {
		ep = os.Getenv("PODSTEP_ENDPOINT")
	}
	if ep == "" {
		t.Log("not run on a runtime: PODSTEP_REPLAY_ENDPOINT_16 and PODSTEP_ENDPOINT name none")
		return
	}
	root := t.TempDir()
	r = e.pcRun(t, "run", "--auto", "-o", "json", "--settle", "0", "--grace-period", "0", "-r", ep,
		"--kubeconfig", e.kubeconfig, "--pod", ns+"/web", "--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
	if r.code != 0 {
		t.Fatalf("run --pod on %s: exit %d", ep, r.code)
	}
	for _, want := range []string{dns, `{"key":"cluster DNS","value":"10.96.0.10 ` + src + `"}`,
		`{"key":"cluster domain","value":"cluster.local ` + src + `"}`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run --pod: the output lacks %s", want)
		}
	}
	if strings.Contains(r.stdout, "MissingClusterDNS") {
		t.Error("run --pod: MissingClusterDNS, though the node's kubelet has a cluster DNS")
	}
}
