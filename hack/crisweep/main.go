// Command crisweep stops and removes, through the CRI, the pod sandboxes a kubelet of
// hack/cluster-up.sh left on a runtime it shares with others: those whose pod UID (the kubelet's
// io.kubernetes.pod.uid label) names a folder in the kubelet's pods directory. StopPodSandbox
// stops the containers and tears the pod's network down (CNI DEL: IPAM lease, iptables rules),
// which killing tasks with ctr would skip; RemovePodSandbox then removes the sandbox and its
// containers. Sandboxes podstep made (label podstep.dev/managed=true) are never touched.
//
//	crisweep -endpoint unix:///var/lib/podstep-harness/run/containerd.sock -pods /var/lib/podstep-cluster/nodes/N/root/pods
//
// hack/cluster-down.sh runs it once per node after stopping the kubelets. It prints one line
// per sandbox and exits 1 when any could not be removed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	endpoint := flag.String("endpoint", "", "the runtime's CRI endpoint (unix:///path/to/containerd.sock)")
	pods := flag.String("pods", "", "the kubelet's pods directory (ROOT_DIR/pods): one folder per pod UID it ran")
	timeout := flag.Duration("timeout", 60*time.Second, "time allowed for the whole sweep")
	flag.Parse()
	if *endpoint == "" || *pods == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: crisweep -endpoint unix:///PATH -pods KUBELET_ROOT/pods")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	err := sweep(ctx, *endpoint, *pods)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "crisweep: %v\n", err)
		os.Exit(1)
	}
}

// kubeletUIDs is the set of pod UIDs with a folder in the kubelet's pods directory.
func kubeletUIDs(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the kubelet's pods directory: %w", err)
	}
	uids := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			uids[filepath.Base(e.Name())] = true
		}
	}
	return uids, nil
}

func sweep(ctx context.Context, endpoint, podsDir string) error {
	uids, err := kubeletUIDs(podsDir)
	if err != nil {
		return err
	}
	if len(uids) == 0 {
		return nil
	}
	if !strings.HasPrefix(endpoint, "unix://") {
		return fmt.Errorf("endpoint %q: expected unix:///path", endpoint)
	}
	if _, err := os.Stat(strings.TrimPrefix(endpoint, "unix://")); err != nil {
		return fmt.Errorf("runtime socket: %w (is the runtime down? then hack/containerd-down.sh removes its pods)", err)
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", endpoint, err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("ListPodSandbox on %s: %w", endpoint, err)
	}
	failed := 0
	for _, sb := range resp.Items {
		if sb.Labels["podstep.dev/managed"] == "true" || !uids[sb.Labels["io.kubernetes.pod.uid"]] {
			continue
		}
		name := sb.Id
		if m := sb.Metadata; m != nil {
			name = fmt.Sprintf("%s/%s (sandbox %.13s)", m.Namespace, m.Name, sb.Id)
		}
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			failed++
			fmt.Printf("✗ %s: StopPodSandbox: %v\n", name, err)
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			failed++
			fmt.Printf("✗ %s: RemovePodSandbox: %v\n", name, err)
			continue
		}
		fmt.Printf("✓ %s: stopped and removed\n", name)
	}
	if failed > 0 {
		return fmt.Errorf("%d sandbox(es) left on %s", failed, endpoint)
	}
	return nil
}
