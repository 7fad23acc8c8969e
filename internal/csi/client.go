package csi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/podstep/podstep/internal/cri"
)

// Timeout is the kubelet's csiTimeout (pkg/volume/csi/csi_plugin.go): the
// budget of every CSI operation context it makes (createCSIOperationContext,
// csi_util.go): MountDevice's calls together, SetUpAt's together, ...
// podstep gives each operation, and each call in it, that budget.
const Timeout = 2 * time.Minute

// Service is the CSI node service's gRPC name.
const Service = "csi.v1.Node"

// The node service's methods podstep sends, named as in csi.proto.
const (
	NodeGetCapabilities = "NodeGetCapabilities"
	NodeStageVolume     = "NodeStageVolume"
	NodeUnstageVolume   = "NodeUnstageVolume"
	NodePublishVolume   = "NodePublishVolume"
	NodeUnpublishVolume = "NodeUnpublishVolume"
)

func init() {
	cri.RegisterService(Service, NodeGetCapabilities, NodeStageVolume, NodeUnstageVolume,
		NodePublishVolume, NodeUnpublishVolume, "NodeGetInfo", "NodeGetVolumeStats", "NodeExpandVolume")
	cri.RegisterMasker(MaskSecrets)
}

// Client sends one driver's node-service calls, each recorded by rec.
type Client struct {
	// Driver is the CSI driver's name, Endpoint its node socket.
	Driver   string
	Endpoint string
	// Timeout bounds each call (the kubelet's csiTimeout).
	Timeout time.Duration

	rec  *cri.Client
	conn *grpc.ClientConn
	node csipb.NodeClient
}

// Dial connects to the node socket of driver at endpoint (a path, or
// unix://PATH) lazily: nothing is sent until the first call. Calls are
// recorded by rec; timeout 0 is Timeout.
func Dial(driver, endpoint string, rec *cri.Client, timeout time.Duration) (*Client, error) {
	if rec == nil {
		return nil, errors.New("csi: no call recorder")
	}
	if timeout <= 0 {
		timeout = Timeout
	}
	path := strings.TrimPrefix(endpoint, "unix://")
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to CSI driver %s at %s: %w", driver, endpoint, err)
	}
	return &Client{Driver: driver, Endpoint: "unix://" + path, Timeout: timeout, rec: rec, conn: conn, node: csipb.NewNodeClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// TimeoutError is a call the driver did not answer within the kubelet's
// CSI timeout.
type TimeoutError struct {
	Driver, Endpoint, Method string
	Timeout                  time.Duration
	Err                      error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: CSI driver %s at %s did not answer within %s: the kubelet's csiTimeout (%s per CSI operation, createCSIOperationContext in pkg/volume/csi) ran out, and the kubelet retries the mount with back-off while the pod waits (its volume wait gives up after 2m3s: WaitForAttachAndMount's podAttachAndMountTimeout)",
		e.Method, e.Driver, e.Endpoint, e.Timeout, Timeout)
}

// Unwrap returns the call's error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// call sends one recorded call.
func call[Req, Resp proto.Message](ctx context.Context, c *Client, method string, req Req,
	fn func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	resp, err := cri.Invoke(ctx, c.rec, method, c.Timeout, req, fn)
	if err != nil && status.Code(err) == codes.DeadlineExceeded && ctx.Err() == nil {
		return resp, &TimeoutError{Driver: c.Driver, Endpoint: c.Endpoint, Method: method, Timeout: c.Timeout, Err: err}
	}
	return resp, err
}

// operation runs fn, one operation of the kubelet's CSI plugin
// (MountDevice, SetUpAt, TearDownAt, UnmountDevice), under one context of
// c.Timeout, as createCSIOperationContext (csi_util.go) gives each: the
// csiTimeout bounds the operation's calls together. A call cut by that
// deadline is a *TimeoutError.
func (c *Client) operation(ctx context.Context, fn func(context.Context) error) error {
	octx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	err := fn(octx)
	var te *TimeoutError
	var ce *cri.Error
	if err != nil && ctx.Err() == nil && errors.Is(octx.Err(), context.DeadlineExceeded) && !errors.As(err, &te) && errors.As(err, &ce) {
		return &TimeoutError{Driver: c.Driver, Endpoint: c.Endpoint, Method: ce.Method, Timeout: c.Timeout, Err: err}
	}
	return err
}

// Capabilities sends NodeGetCapabilities and says whether the answer lists
// capability (the kubelet's nodeSupportsCapability, csi_client.go: one call
// per question asked).
func (c *Client) Capabilities(ctx context.Context, capability csipb.NodeServiceCapability_RPC_Type) (bool, error) {
	resp, err := call(ctx, c, NodeGetCapabilities, &csipb.NodeGetCapabilitiesRequest{}, c.node.NodeGetCapabilities)
	if err != nil {
		return false, err
	}
	for _, cp := range resp.GetCapabilities() {
		if cp.GetRpc().GetType() == capability {
			return true, nil
		}
	}
	return false, nil
}

// Stage sends NodeStageVolume.
func (c *Client) Stage(ctx context.Context, req *csipb.NodeStageVolumeRequest) error {
	_, err := call(ctx, c, NodeStageVolume, req, c.node.NodeStageVolume)
	return err
}

// Publish sends NodePublishVolume.
func (c *Client) Publish(ctx context.Context, req *csipb.NodePublishVolumeRequest) error {
	_, err := call(ctx, c, NodePublishVolume, req, c.node.NodePublishVolume)
	return err
}

// Unpublish sends NodeUnpublishVolume.
func (c *Client) Unpublish(ctx context.Context, volumeID, targetPath string) error {
	_, err := call(ctx, c, NodeUnpublishVolume, &csipb.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: targetPath}, c.node.NodeUnpublishVolume)
	return err
}

// Unstage sends NodeUnstageVolume.
func (c *Client) Unstage(ctx context.Context, volumeID, stagingPath string) error {
	_, err := call(ctx, c, NodeUnstageVolume, &csipb.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: stagingPath}, c.node.NodeUnstageVolume)
	return err
}

// Final says whether a failed call's error is final: the driver is known
// not to have done the work (the kubelet's isFinalError, csi_client.go).
// A call that timed out, was cancelled or lost its connection may have
// done it: the kubelet then treats the volume as possibly mounted (an
// uncertain state) and unpublishes or unstages it at teardown.
func Final(err error) bool {
	if err == nil {
		return true
	}
	var ce *cri.Error
	if !errors.As(err, &ce) {
		return true
	}
	st, ok := status.FromError(ce.Err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// MaskSecrets replaces, in a CSI message (at any depth), every value of a
// field the CSI spec marks with the csi_secret option (the secrets maps of
// NodeStageVolume and NodePublishVolume, ...) with cri.Mask. Other messages
// are left alone. cri's Redactor runs it on every copy it makes.
func MaskSecrets(m proto.Message) {
	if m == nil {
		return
	}
	r := m.ProtoReflect()
	if r.Descriptor().ParentFile().Package() != "csi.v1" {
		return
	}
	maskMessage(r)
}

func maskMessage(r protoreflect.Message) {
	r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case isSecret(fd) && fd.IsMap():
			mp := r.Mutable(fd).Map()
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				mp.Set(k, protoreflect.ValueOfString(cri.Mask))
				return true
			})
		case isSecret(fd) && fd.Kind() == protoreflect.StringKind && !fd.IsList():
			r.Set(fd, protoreflect.ValueOfString(cri.Mask))
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				maskMessage(mv.Message())
				return true
			})
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := 0; i < v.List().Len(); i++ {
				maskMessage(v.List().Get(i).Message())
			}
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			maskMessage(v.Message())
		}
		return true
	})
}

// isSecret says whether the field has the csi_secret option.
func isSecret(fd protoreflect.FieldDescriptor) bool {
	opts, ok := fd.Options().(*descriptorpb.FieldOptions)
	if !ok || opts == nil {
		return false
	}
	b, _ := proto.GetExtension(opts, csipb.E_CsiSecret).(bool)
	return b
}

// Secrets are the values of the secrets of a request, for the redactor's
// free-text masking (a driver's error may quote one).
func Secrets(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
