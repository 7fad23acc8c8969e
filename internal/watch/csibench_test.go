package watch

import (
	"fmt"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/volume"
)

// BenchmarkCSIHooks is the watcher's own time on a kubelet's CSI calls
// (what BenchmarkCSIAddedLatency's proxy waits for before it forwards a
// call and before it answers): "caps" a NodeGetCapabilities (waiting for
// its operation), "publish" a NodePublishVolume of a new volume (a step
// of the pod its pod info names, ten per pod: decoded, secrets told to the redactor,
// redacted, the step closed with the pod's state), "republish" one for a
// target already published (counted apart).
func BenchmarkCSIHooks(b *testing.B) {
	req := &csipb.NodePublishVolumeRequest{VolumeId: "vol", TargetPath: csi.TargetPath("/var/lib/kubelet/pods/uid-bench", "pv"),
		VolumeCapability: &csipb.VolumeCapability{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: "ext4"}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}},
		Secrets: map[string]string{"key": "Publish-Secret-2m7x"},
		VolumeContext: map[string]string{csi.PodNameKey: "web", csi.PodNamespaceKey: "default", csi.PodUIDKey: "uid-bench",
			csi.ServiceAccountKey: "default", csi.EphemeralKey: "false", "size": "1Gi",
			volume.TokensKey: `{"":{"token":"eyJhbGciOiJSUzI1NiJ9.bench-token.sig","expirationTimestamp":"2026-11-29T16:00:00Z"}}`}}
	resp, _ := proto.Marshal(&csipb.NodePublishVolumeResponse{})
	caps, _ := proto.Marshal(&csipb.NodeGetCapabilitiesResponse{})
	for _, tc := range []string{"caps", "publish", "republish"} {
		b.Run(tc, func(b *testing.B) {
			w := New(Options{MaxPods: 10})
			defer w.Close()
			h := w.Hooks()
			var seq uint64
			fixed, _ := proto.Marshal(req)
			for b.Loop() {
				seq++
				c := &proxy.Call{Seq: seq, Via: "bench.csi", Method: "/csi.v1.Node/NodePublishVolume", Arrived: time.Now(), Start: time.Now(), Response: resp}
				switch tc {
				case "caps":
					c.Method, c.Request, c.Response = "/csi.v1.Node/NodeGetCapabilities", nil, caps
				case "publish":
					r := proto.Clone(req).(*csipb.NodePublishVolumeRequest)
					r.TargetPath = csi.TargetPath(fmt.Sprintf("/var/lib/kubelet/pods/uid-bench-%d", seq/10), fmt.Sprintf("pv-%d", seq))
					r.VolumeContext[csi.PodUIDKey] = fmt.Sprintf("uid-bench-%d", seq/10)
					c.Request, _ = proto.Marshal(r)
				default:
					c.Request = fixed
				}
				h.Arrived(c)
				h.Done(c)
			}
		})
	}
}
