//go:build csimock

// Command csimock serves the Kubernetes e2e mock CSI driver
// (k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service, of
// the Kubernetes v1.37.0 source the harness builds from) on a unix socket,
// for podstep's integration tests: its identity, controller and node
// services, as a CSI driver's node plugin serves them. It is compiled by
// hack/csi-mock-build.sh inside hack/kubelet's module (k8s.io/kubernetes
// v1.37.0), not as part of podstep's module.
//
//	csimock --endpoint /run/csimock/csi.sock [--name io.kubernetes.storage.mock]
//	        [--registration DIR] [--attach] [--create-volume NAME]...
//
// The mock keeps its volumes in memory: a PersistentVolume's volumeHandle
// must be a volume it made. Each --create-volume NAME is created through
// its CreateVolume at start, and "volume NAME ID" printed on stdout for
// each, before "ready ENDPOINT". Without --attach the driver needs no
// attach (DisableAttach: NodeStageVolume and NodePublishVolume take no
// publish_context "device"). --registration DIR also serves the kubelet's
// plugin registration (k8s.io/kubelet/pkg/apis/pluginregistration/v1) on
// DIR/NAME-reg.sock, as node-driver-registrar does. SIGINT/SIGTERM stop it.
//
// One repair: the mock's NodePublishVolume of a new ephemeral (inline)
// volume dereferences the volume it did not find (node.go, v1.37.0: v is
// nil when findVolNoLock finds none) and panics; csimock publishes those as
// the mock means to (MockVolumes[id] = {ISEphemeral: true}, the target dir
// made), and leaves every other call to the mock.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
)

// node is the mock with its ephemeral publish repaired.
type node struct {
	service.Service
	mu sync.Mutex
}

func (n *node) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if req.GetVolumeContext()["csi.storage.k8s.io/ephemeral"] != "true" || req.GetVolumeId() == "" || req.GetTargetPath() == "" {
		return n.Service.NodePublishVolume(ctx, req)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := service.MockVolumes[req.GetVolumeId()]; !ok {
		if err := os.Mkdir(req.GetTargetPath(), 0o755); err != nil && !os.IsExist(err) {
			return nil, status.Errorf(codes.Internal, "NodePublishVolume: could not create target dir %q: %v", req.GetTargetPath(), err)
		}
		service.MockVolumes[req.GetVolumeId()] = service.Volume{ISEphemeral: true, ISPublished: true, TargetPath: req.GetTargetPath()}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (n *node) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	n.mu.Lock()
	eph := service.MockVolumes[req.GetVolumeId()].ISEphemeral
	n.mu.Unlock()
	resp, err := n.Service.NodeUnpublishVolume(ctx, req)
	if err == nil && eph {
		// The mock forgets an ephemeral volume but leaves its dir; a
		// driver removes the target path it published (CSI spec).
		_ = os.RemoveAll(req.GetTargetPath())
	}
	return resp, err
}

type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(s string) error { *n = append(*n, s); return nil }

// registration answers the kubelet's plugin watcher for the driver.
type registration struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
}

func (r registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r registration) NotifyRegistrationStatus(context.Context, *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	return &registerapi.RegistrationStatusResponse{}, nil
}

func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	_ = os.Remove(path) // a socket left by a killed run
	return net.Listen("unix", path)
}

func main() {
	endpoint := flag.String("endpoint", "", "the unix socket path to serve the CSI services on")
	name := flag.String("name", service.Name, "the driver's name")
	regDir := flag.String("registration", "", "serve the kubelet's plugin registration on DIR/NAME-reg.sock")
	attach := flag.Bool("attach", false, "require attach (publish_context \"device\"), as the mock does by default")
	var vols names
	flag.Var(&vols, "create-volume", "create a volume NAME through CreateVolume at start (repeatable)")
	flag.Parse()
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "csimock: --endpoint PATH is required")
		os.Exit(2)
	}
	svc := service.New(service.Config{DriverName: *name, DisableAttach: !*attach, PermissiveTargetPath: true})
	for _, v := range vols {
		resp, err := svc.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: v,
			VolumeCapabilities: []*csi.VolumeCapability{{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "csimock: CreateVolume %s: %v\n", v, err)
			os.Exit(1)
		}
		fmt.Printf("volume %s %s\n", v, resp.GetVolume().GetVolumeId())
	}
	l, err := listen(*endpoint)
	if err != nil {
		fmt.Fprintf(os.Stderr, "csimock: %v\n", err)
		os.Exit(1)
	}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, svc)
	csi.RegisterControllerServer(srv, svc)
	csi.RegisterNodeServer(srv, &node{Service: svc})
	go func() { _ = srv.Serve(l) }()
	var reg *grpc.Server
	if *regDir != "" {
		rl, err := listen(filepath.Join(*regDir, *name+"-reg.sock"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "csimock: %v\n", err)
			os.Exit(1)
		}
		reg = grpc.NewServer()
		registerapi.RegisterRegistrationServer(reg, registration{name: *name, endpoint: *endpoint})
		go func() { _ = reg.Serve(rl) }()
	}
	fmt.Printf("ready unix://%s\n", *endpoint)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	srv.Stop()
	if reg != nil {
		reg.Stop()
	}
	_ = os.Remove(*endpoint)
}
