//go:build cluster

package cluster

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodServiceEnv: the Service env vars of run --pod are the real
// kubelet's. A Service with two named ports in the test's namespace, then
// a pod on the containerd 1.6 node: the kubelet adds the Service's and
// default/kubernetes's variables (getServiceEnvVarMap, kubelet_pods.go).
// podstep replays the pod (--keep) on the replay runtime of the same
// version with a kubeconfig bound only to deploy/clusterrole.yaml's role;
// `env` run in each container (ExecSync) must give the same service
// variables, name and value; then the same with enableServiceLinks false
// (only kubernetes's). podstep's sandbox is removed through the CRI.
func TestPodServiceEnv(t *testing.T) {
	e := pcSetup(t)
	if len(e.nodes) == 0 {
		pcNeed(t, "PODSTEP_NODE_16/_2 name no node (hack/cluster-up.sh)")
	}
	ep := os.Getenv("PODSTEP_REPLAY_ENDPOINT_16")
	if ep == "" {
		pcNeed(t, "PODSTEP_REPLAY_ENDPOINT_16 names no replay runtime (hack/cluster-up.sh)")
	}
	n := e.nodes[0]
	ns := e.pcNamespace(t)
	ctx := pcCtx(t)
	svc, err := e.cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-db"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{
			{Name: "pg", Port: 5432}, {Name: "metrics", Port: 9187, Protocol: corev1.ProtocolUDP}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatalf("the API server gave Service web-db no cluster IP: %q", svc.Spec.ClusterIP)
	}
	e.pcBind(t, ns, "podstep", pcClusterRole(t).Rules)
	kc := e.pcKubeconfigFor(t, ns, "podstep")
	// The kubelet's service informer sees the Service before it starts the
	// pod (its own race, makeEnvironmentVariables' comment).
	time.Sleep(2 * time.Second)

	for _, tc := range []struct {
		name  string
		links bool   // the pod's enableServiceLinks
		want  string // a line the kubelet's container must have
	}{
		{"links-on", true, "WEB_DB_SERVICE_HOST=" + svc.Spec.ClusterIP},
		{"links-off", false, "KUBERNETES_SERVICE_HOST"}, // default/kubernetes's only
	} {
		name, links := tc.name, tc.links
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
				NodeName: n.name, EnableServiceLinks: &links, TerminationGracePeriodSeconds: ptrInt64(0),
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: "app", Image: busybox, Command: []string{"sleep", "3600"},
					Env: []corev1.EnvVar{{Name: "DB", Value: "$(WEB_DB_SERVICE_HOST):$(WEB_DB_SERVICE_PORT_PG)"}}}},
			}}
			e.pcCreatePod(t, ns, pod)
			var real *corev1.Pod
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				p, err := e.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil || !pcReady(p) {
					return false, nil
				}
				real = p
				return true, nil
			}); err != nil {
				t.Fatalf("the kubelet's pod is not Ready: %v", err)
			}
			kubelet := serviceVars(t, criEnv(t, n.endpoint, strings.TrimPrefix(real.Status.ContainerStatuses[0].ContainerID, "containerd://")))

			root := t.TempDir()
			t.Cleanup(func() { pcUnmountUnder(root) })
			t.Cleanup(func() { criRemoveReplay(t, ep, string(real.UID)) })
			r := e.pcRun(t, "run", "--auto", "-o", "json", "--keep", "--settle", "0", "-r", ep, "--kubeconfig", kc, "--pod", ns+"/"+name,
				"--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))
			if r.code != 0 {
				t.Fatalf("run --pod: exit %d", r.code)
			}
			podstep := serviceVars(t, criEnv(t, ep, criReplayContainer(t, ep, string(real.UID))))

			if !strings.Contains(strings.Join(kubelet, "\n"), tc.want) {
				t.Fatalf("the kubelet's container has no %s: %v", tc.want, kubelet)
			}
			if strings.Join(podstep, "\n") != strings.Join(kubelet, "\n") {
				t.Errorf("service env vars differ\nkubelet's:\n  %s\npodstep's:\n  %s", strings.Join(kubelet, "\n  "), strings.Join(podstep, "\n  "))
			}
			if hasWebDB := strings.Contains(strings.Join(podstep, "\n"), "\nWEB_DB_SERVICE_HOST="); hasWebDB != links {
				t.Errorf("enableServiceLinks %v: WEB_DB_ vars present %v", links, hasWebDB)
			}
		})
	}
}

// serviceVars keeps the lines of env's output that are Service variables
// (and DB, which expands two of them), sorted.
func serviceVars(t *testing.T, env string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(env, "\n") {
		name, _, _ := strings.Cut(l, "=")
		if strings.HasPrefix(name, "KUBERNETES_") || strings.HasPrefix(name, "WEB_DB_") || name == "DB" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// criClient connects to the runtime at endpoint; done closes the connection.
func criClient(t *testing.T, endpoint string) (rt runtimeapi.RuntimeServiceClient, done func()) {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	return runtimeapi.NewRuntimeServiceClient(conn), func() { _ = conn.Close() }
}

// criEnv runs env in container id (ExecSync, as kubectl exec would).
func criEnv(t *testing.T, endpoint, id string) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rt, closeRT := criClient(t, endpoint)
	defer closeRT()
	resp, err := rt.ExecSync(cctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"env"}, Timeout: 10})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("env in %s on %s: %v (exit %d, %s)", id, endpoint, err, resp.GetExitCode(), resp.GetStderr())
	}
	return string(resp.Stdout)
}

// criReplayContainer is the running container of podstep's replay of the
// cluster pod uid (its podstep.dev/replay-of label).
func criReplayContainer(t *testing.T, endpoint, uid string) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt, closeRT := criClient(t, endpoint)
	defer closeRT()
	resp, err := rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}, LabelSelector: map[string]string{"podstep.dev/replay-of": uid}}})
	if err != nil || len(resp.Containers) != 1 {
		t.Fatalf("podstep's running container of pod %s on %s: %v, %d found", uid, endpoint, err, len(resp.GetContainers()))
	}
	return resp.Containers[0].Id
}

// criRemoveReplay stops and removes podstep's sandboxes of the cluster pod
// uid (run with --keep).
func criRemoveReplay(t *testing.T, endpoint, uid string) {
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, closeRT := criClient(t, endpoint)
	defer closeRT()
	resp, err := rt.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"podstep.dev/replay-of": uid}}})
	if err != nil {
		t.Logf("cleanup: list podstep's sandboxes on %s: %v", endpoint, err)
		return
	}
	for _, sb := range resp.Items {
		if _, err := rt.StopPodSandbox(cctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			t.Logf("cleanup: stop sandbox %s: %v", sb.Id, err)
		}
		if _, err := rt.RemovePodSandbox(cctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			t.Logf("cleanup: remove sandbox %s: %v", sb.Id, err)
		}
	}
}
