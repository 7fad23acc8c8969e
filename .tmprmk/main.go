package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	conn, _ := grpc.NewClient(os.Args[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx := context.Background()
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		panic(err)
	}
	for _, s := range sbs.Items {
		if !strings.HasSuffix(s.Metadata.Name, "-podstep-kubelet") {
			continue
		}
		cs, _ := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: s.Id}})
		for _, c := range cs.GetContainers() {
			rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id})
			rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.Id})
		}
		_, e1 := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id})
		_, e2 := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id})
		fmt.Println("removed", s.Metadata.Name, e1, e2)
	}
}
