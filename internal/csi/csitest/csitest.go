// Package csitest is a CSI node service for tests: a real gRPC server on a
// unix socket that answers NodeGetCapabilities with the capabilities it is
// given, records every request it gets (secrets included: the driver side
// sees them), and can hang a method until its caller gives up.
package csitest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Got is one request the node server received.
type Got struct {
	Method  string
	Request proto.Message
}

// Node is a recording csi.NodeServer.
type Node struct {
	csipb.UnimplementedNodeServer
	// Caps are the node capabilities it answers with.
	Caps []csipb.NodeServiceCapability_RPC_Type
	// Hang names a method that blocks until its context ends.
	Hang string
	// Endpoint is unix://PATH of the socket it serves.
	Endpoint string

	mu  sync.Mutex
	got []Got
}

// Serve starts n on a unix socket in a temp dir, stopped when the test ends.
func Serve(t testing.TB, n *Node) *Node {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi") // short: a socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	csipb.RegisterNodeServer(s, n)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	n.Endpoint = "unix://" + sock
	return n
}

// Got returns what it received, in order.
func (n *Node) Got() []Got {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Got(nil), n.got...)
}

// Methods returns the methods it received, in order.
func (n *Node) Methods() []string {
	var out []string
	for _, g := range n.Got() {
		out = append(out, g.Method)
	}
	return out
}

// Last returns the last request of method (nil when none).
func (n *Node) Last(method string) proto.Message {
	g := n.Got()
	for i := len(g) - 1; i >= 0; i-- {
		if g[i].Method == method {
			return g[i].Request
		}
	}
	return nil
}

func (n *Node) record(ctx context.Context, method string, req proto.Message) error {
	n.mu.Lock()
	n.got = append(n.got, Got{Method: method, Request: proto.Clone(req)})
	hang := n.Hang == method
	n.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// NodeGetCapabilities answers n.Caps.
func (n *Node) NodeGetCapabilities(ctx context.Context, req *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	if err := n.record(ctx, "NodeGetCapabilities", req); err != nil {
		return nil, err
	}
	resp := &csipb.NodeGetCapabilitiesResponse{}
	for _, c := range n.Caps {
		resp.Capabilities = append(resp.Capabilities, &csipb.NodeServiceCapability{
			Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: c}}})
	}
	return resp, nil
}

// NodeStageVolume records the request and makes the staging dir.
func (n *Node) NodeStageVolume(ctx context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	if err := n.record(ctx, "NodeStageVolume", req); err != nil {
		return nil, err
	}
	return &csipb.NodeStageVolumeResponse{}, os.MkdirAll(req.StagingTargetPath, 0o750)
}

// NodeUnstageVolume records the request.
func (n *Node) NodeUnstageVolume(ctx context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	if err := n.record(ctx, "NodeUnstageVolume", req); err != nil {
		return nil, err
	}
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume records the request and makes the target dir with a
// file in it, as a driver that mounts something there would.
func (n *Node) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	if err := n.record(ctx, "NodePublishVolume", req); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(req.TargetPath, 0o750); err != nil {
		return nil, err
	}
	return &csipb.NodePublishVolumeResponse{}, os.WriteFile(filepath.Join(req.TargetPath, "published"), []byte(req.VolumeId), 0o644)
}

// NodeUnpublishVolume records the request and removes the target dir, as
// the CSI spec asks of a driver.
func (n *Node) NodeUnpublishVolume(ctx context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	if err := n.record(ctx, "NodeUnpublishVolume", req); err != nil {
		return nil, err
	}
	return &csipb.NodeUnpublishVolumeResponse{}, os.RemoveAll(req.TargetPath)
}

// registration is a plugin registration server (node-driver-registrar's).
type registration struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
}

func (r registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

// ServeRegistration serves the kubelet's plugin registration for driver
// name, whose node socket is endpoint, at sock, until the test ends.
func ServeRegistration(t testing.TB, sock, name, endpoint string) string {
	t.Helper()
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	registerapi.RegisterRegistrationServer(s, registration{name: name, endpoint: endpoint})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return sock
}
