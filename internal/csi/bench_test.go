package csi_test

import (
	"context"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/csi/csitest"
)

// publishRequest is a NodePublishVolume as the kubelet sends it for a PV
// with pod info and a publish secret.
func publishRequest() *csipb.NodePublishVolumeRequest {
	return &csipb.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: "/tmp/podstep-bench-target",
		StagingTargetPath: "/var/lib/podstep/plugins/kubernetes.io/csi/d/abc/globalmount",
		VolumeCapability: &csipb.VolumeCapability{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: "ext4"}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}},
		Secrets: map[string]string{"key": "Publish-Secret-2m7x"},
		VolumeContext: map[string]string{csi.PodNameKey: "web", csi.PodNamespaceKey: "default", csi.PodUIDKey: "uid-1",
			csi.ServiceAccountKey: "default", csi.EphemeralKey: "false", "size": "1Gi"}}
}

// BenchmarkCall measures one NodeGetCapabilities round trip to an
// in-process driver: "raw" with a plain gRPC client, "recorded" through
// podstep's Client (cri.Invoke: redaction with the csi_secret masker,
// recording, hooks). The difference is podstep's own time per CSI call.
func BenchmarkCall(b *testing.B) {
	node := csitest.Serve(b, &csitest.Node{})
	b.Run("raw", func(b *testing.B) {
		conn, err := grpc.NewClient(node.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		nc := csipb.NewNodeClient(conn)
		for b.Loop() {
			if _, err := nc.NodeGetCapabilities(context.Background(), &csipb.NodeGetCapabilitiesRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("recorded", func(b *testing.B) {
		c, err := csi.Dial("d", node.Endpoint, recorder(b), 0)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for b.Loop() {
			if _, err := c.Capabilities(context.Background(), csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRedact is the redacted copy cri's Redactor makes of a
// NodePublishVolumeRequest (clone, then the csi_secret masker): what every
// recorded CSI request costs beyond its round trip.
func BenchmarkRedact(b *testing.B) {
	req := publishRequest()
	r := &cri.Redactor{}
	for b.Loop() {
		_ = r.Redact(req)
	}
}
