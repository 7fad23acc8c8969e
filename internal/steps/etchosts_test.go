package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/node"
)

// TestEtcHostsMount: every container gets the pod's hosts file at
// /etc/hosts (makeMounts, kubelet_pods.go), a host-network pod's too: the
// kubelet gives such a pod the node's IPs as pod IPs (generateAPIPodStatus,
// copied into the runtime's pod status by SyncPod), and its file is the
// node's /etc/hosts under the host-network header (ensureHostsFile). Its
// status.podIP is the node's IP. A container mounting /etc/hosts itself
// gets no second one.
func TestEtcHostsMount(t *testing.T) {
	node := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(node, []byte("10.1.2.3\tnode-a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := etcHosts
	etcHosts = node
	t.Cleanup(func() { etcHosts = old })
	for _, tc := range []struct {
		name, spec string
		mounted    bool
		header     string // the file's first line
		nodeCopy   bool   // the file holds the node's hosts file
		podIPEnv   string // "" any non-empty value; "node" nodeIP()
	}{
		{"pod network", "", true, "# Kubernetes-managed hosts file.", false, ""},
		{"host network", "hostNetwork: true\n", true, "# Kubernetes-managed hosts file (host network).", true, "node"},
		{"own /etc/hosts", "volumes: [{name: h, emptyDir: {}}]\n", false, "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mount := ""
			if !tc.mounted {
				mount = "    volumeMounts: [{name: h, mountPath: /etc/hosts}]\n"
			}
			b := parse(t, `apiVersion: v1
kind: Pod
metadata: {name: hosts}
spec:
  `+strings.ReplaceAll(tc.spec, "\n", "\n  ")+`containers:
  - name: app
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
`+mount)
			o := testOptions(t)
			e := runAll(t, b, newSim(t), o)
			req := lastCreateContainer(t, e)
			want := filepath.Join(o.Config.RootDir, "pods", string(e.Pod().UID), "etc-hosts")
			var got []string
			for _, m := range req.Config.Mounts {
				if m.ContainerPath == "/etc/hosts" {
					got = append(got, m.HostPath)
				}
			}
			switch {
			case tc.mounted && (len(got) != 1 || got[0] != want):
				t.Fatalf("/etc/hosts mounted from %q, want %q", got, want)
			case !tc.mounted && (len(got) != 1 || got[0] == want):
				t.Fatalf("/etc/hosts mounted from %q, want only the container's own volume", got)
			}
			for _, env := range req.Config.Envs {
				if env.Key != "POD_IP" {
					continue
				}
				if v := string(env.Value); v == "" || tc.podIPEnv == "node" && v != nodeIP() {
					t.Errorf("POD_IP = %q, want %s", env.Value, map[bool]string{true: "the node's IP " + nodeIP(), false: "the pod's IP"}[tc.podIPEnv == "node"])
				}
			}
			if !tc.mounted {
				return
			}
			data, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(string(data), "\n"); first != tc.header {
				t.Errorf("hosts file starts %q, want %q", first, tc.header)
			}
			if strings.Contains(string(data), "node-a") != tc.nodeCopy {
				t.Errorf("hosts file %q: the node's entries present = %v, want %v", data, !tc.nodeCopy, tc.nodeCopy)
			}
		})
	}
}

// TestHostIPFromNode: the pod's hostIP, and a host-network pod's pod IP,
// are the Node's InternalIP when the Node has addresses (getHostIPsAnyWay,
// GetNodeHostIPs: InternalIP first, then ExternalIP), not this machine's.
func TestHostIPFromNode(t *testing.T) {
	for _, tc := range []struct{ name, addresses, want string }{
		{"internal", "[{type: Hostname, address: worker-7}, {type: ExternalIP, address: 203.0.113.9}, {type: InternalIP, address: 192.0.2.7}]", "192.0.2.7"},
		{"external only", "[{type: ExternalIP, address: 203.0.113.9}]", "203.0.113.9"},
		{"none", "[]", nodeIP()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := node.Parse("node.yaml", []byte(nodeFactsNode+"  addresses: "+tc.addresses+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			o := testOptions(t)
			o.Node = n
			b := parse(t, `apiVersion: v1
kind: Pod
metadata: {name: hostip}
spec:
  hostNetwork: true
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    env:
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
`)
			e := runAll(t, b, newSim(t), o)
			var env []string
			for _, kv := range lastCreateContainer(t, e).Config.Envs {
				env = append(env, kv.Key+"="+string(kv.Value))
			}
			if got, want := strings.Join(env, " "), "POD_IP="+tc.want+" HOST_IP="+tc.want; got != want {
				t.Errorf("env %q, want %q", got, want)
			}
			if got := e.PodState().Status.HostIP; got != tc.want {
				t.Errorf("status.hostIP %q, want %q", got, tc.want)
			}
		})
	}
}
