package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkProxyMemory drives the podstep proxy binary (--auto, every pod
// followed, in front of the simulated runtime in a process of its own)
// with a kubelet's calls for 1,000 pods, one after another: sandbox,
// image, create, start, an exec hook answering 256 KiB, a relist, the
// teardown. It reports the proxy's RSS idle (started, no call yet), after
// the first 100 pods and after the 1,000 (VmRSS, MB): the bars are rss-1000
// within +20 MB of rss-100 (issue 25), within 10 % of it and an idle RSS of
// at most 30 MiB (issue 36). PODSTEP_PROXY_MEM_PODS changes the 1,000;
// PODSTEP_PROXY_MEM_BIN runs another podstep binary (an older one, to
// compare).
//
//	go test -run '^$' -bench ProxyMemory -benchtime 1x ./cmd/podstep
func BenchmarkProxyMemory(b *testing.B) {
	pods := 1000
	if v := os.Getenv("PODSTEP_PROXY_MEM_PODS"); v != "" {
		pods, _ = strconv.Atoi(v)
	}
	for b.Loop() {
		idle, rss100, rssN := proxyMemory(b, pods, nil)
		b.ReportMetric(idle, "rss-idle-MB")
		b.ReportMetric(rss100, "rss-100-MB")
		b.ReportMetric(rssN, fmt.Sprintf("rss-%d-MB", pods))
		b.ReportMetric(rssN-rss100, "growth-MB")
		b.ReportMetric(100*(rssN-rss100)/rss100, "growth-%")
	}
}

// proxyMemory runs the proxy and the pods; extra are more proxy flags.
func proxyMemory(tb testing.TB, pods int, extra []string) (idle, rss100, rssN float64) {
	d, err := os.MkdirTemp("", "pxm")
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(d) }()
	bin := bin
	if b := os.Getenv("PODSTEP_PROXY_MEM_BIN"); b != "" {
		bin = b
	}
	up := startSim(tb, bin)
	defer up.Stop()
	sock := filepath.Join(d, "p.sock")
	px, stop := startProxy(tb, bin, sock, up.Endpoint, nil, append([]string{"-o", "short"}, extra...)...)
	defer stop()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	time.Sleep(500 * time.Millisecond) // settled after its start
	idle = rssMB(tb, px.Process.Pid)
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctx := context.Background()
	hook := []string{"echo", strings.Repeat("h", 256<<10)}
	must := func(_ any, err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	for i := range pods {
		name, uid := fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i)
		labels := map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid}
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
			Hostname: name, LogDirectory: filepath.Join(d, "logs", uid), Labels: labels}
		sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		must(sb, err)
		must(rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.PodSandboxId}))
		image := &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}
		must(img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image}))
		cl := map[string]string{"io.kubernetes.container.name": "app"}
		for k, v := range labels {
			cl[k] = v
		}
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: cfg,
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: image,
				Command: []string{"sleep", "9"}, LogPath: "app/0.log", Labels: cl}})
		must(c, err)
		must(rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}))
		must(rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: c.ContainerId, Cmd: hook}))
		must(rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}}}))
		must(rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId}))
		must(rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.ContainerId}))
		must(rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId}))
		must(rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ContainerId}))
		must(rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId}))
		switch i + 1 {
		case 100:
			time.Sleep(500 * time.Millisecond) // the last steps close
			rss100 = rssMB(tb, px.Process.Pid)
		case pods:
			time.Sleep(500 * time.Millisecond)
			rssN = rssMB(tb, px.Process.Pid)
		}
	}
	return idle, rss100, rssN
}

// rssMB is a process's resident set (VmRSS) in MB.
func rssMB(tb testing.TB, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}
