package cri

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Default per-call timeouts: crictl's 2 s is too short for RunPodSandbox on
// a loaded node, so podstep uses the kubelet's --runtime-request-timeout
// default; image pulls get their own, longer budget.
const (
	DefaultTimeout     = 2 * time.Minute
	DefaultPullTimeout = 10 * time.Minute
)

// Options tune a Client.
type Options struct {
	// Timeout bounds each CRI call except PullImage (0 = DefaultTimeout);
	// RunPodSandbox gets twice it (SandboxTimeout), StopContainer and
	// ExecSync it plus their own timeout, as the kubelet gives them.
	Timeout time.Duration
	// PullTimeout bounds PullImage (0 = DefaultPullTimeout).
	PullTimeout time.Duration
}

// Client is the one path from podstep to a CRI runtime. It is safe for
// concurrent use.
type Client struct {
	RuntimeEndpoint string
	ImageEndpoint   string
	// Redactor masks secrets in recorded calls.
	Redactor *Redactor

	rt    runtimeapi.RuntimeServiceClient
	img   runtimeapi.ImageServiceClient
	conns []*grpc.ClientConn
	opts  Options

	mu      sync.Mutex
	seq     int
	calls   []Call
	onCall  []func(Call)
	onStart []func(method string, req proto.Message)
	tracer  Tracer
}

// Dial connects to a runtime (and image service, which defaults to the
// runtime endpoint). It does not send anything: grpc connects lazily, so the
// first call is where an unreachable runtime shows.
func Dial(runtimeEndpoint, imageEndpoint string, o Options) (*Client, error) {
	if imageEndpoint == "" {
		imageEndpoint = runtimeEndpoint
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PullTimeout <= 0 {
		o.PullTimeout = DefaultPullTimeout
	}
	rconn, err := dial(runtimeEndpoint)
	if err != nil {
		return nil, err
	}
	c := &Client{RuntimeEndpoint: runtimeEndpoint, ImageEndpoint: imageEndpoint, Redactor: &Redactor{}, opts: o}
	c.conns = append(c.conns, rconn)
	c.rt = runtimeapi.NewRuntimeServiceClient(rconn)
	iconn := rconn
	if imageEndpoint != runtimeEndpoint {
		if iconn, err = dial(imageEndpoint); err != nil {
			_ = rconn.Close() // the dial error is the one to report
			return nil, err
		}
		c.conns = append(c.conns, iconn)
	}
	c.img = runtimeapi.NewImageServiceClient(iconn)
	return c, nil
}

func dial(endpoint string) (*grpc.ClientConn, error) {
	target, err := Target(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	return conn, nil
}

// Close closes the connections.
func (c *Client) Close() error {
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// OnCall registers fn to receive every finished call, in order.
func (c *Client) OnCall(fn func(Call)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onCall = append(c.onCall, fn)
}

// OnStart registers fn to be told when a call is sent (before its answer).
func (c *Client) OnStart(fn func(method string, req proto.Message)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onStart = append(c.onStart, fn)
}

// Calls returns every call recorded so far.
func (c *Client) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// TimeInCalls is the total time spent waiting for the runtime.
func (c *Client) TimeInCalls() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	for _, call := range c.calls {
		d += call.Duration
	}
	return d
}

// settled detaches a call that makes something in the runtime
// (RunPodSandbox, CreateContainer, StartContainer) from its caller's
// cancellation; the call keeps its own timeout. A runtime goes on with such a
// call after its client gives up: an abandoned RunPodSandbox or
// CreateContainer makes an object whose ID the client never learns, and
// containerd keeps the container of an abandoned StartContainer "in
// starting state", which RemoveContainer refuses, until the start ends. So
// on Ctrl-C the answer is awaited, and teardown removes what was made. The
// kubelet does the same: Kubelet.SyncPod runs the runtime's SyncPod under
// context.WithoutCancel (pkg/kubelet/kubelet.go).
func settled(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// Unavailable reports whether err says the runtime went away: its socket
// refused the connection or dropped it (gRPC Unavailable).
func Unavailable(err error) bool { return status.Code(err) == codes.Unavailable }

// invoke sends one call with its timeout and records it.
func invoke[Req, Resp proto.Message](ctx context.Context, c *Client, method string, timeout time.Duration, req Req,
	fn func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	c.mu.Lock()
	starts := append([]func(string, proto.Message){}, c.onStart...)
	tracer := c.tracer
	c.mu.Unlock()
	redReq := c.Redactor.Redact(req)
	for _, f := range starts {
		f(method, redReq)
	}
	var endSpan func(Call)
	if tracer != nil {
		ctx, endSpan = tracer.StartCall(ctx, CallStart{Method: method, FullMethod: FullMethod(method), Request: redReq, Size: proto.Size(req)})
	}
	cctx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	start := time.Now()
	resp, err := fn(cctx, req)
	dur := time.Since(start)

	// The runtime's error text can quote what it was given (a command, a
	// mount path): recorded masked, with its gRPC code.
	call := Call{Method: method, Request: redReq, Err: c.Redactor.Error(err), Start: start, Duration: dur}
	if err == nil {
		call.Response = c.Redactor.Response(resp)
	}
	c.mu.Lock()
	c.seq++
	call.Seq = c.seq
	c.calls = append(c.calls, call)
	hooks := append([]func(Call){}, c.onCall...)
	c.mu.Unlock()
	if endSpan != nil {
		endSpan(call)
	}
	for _, f := range hooks {
		f(call)
	}
	if err != nil {
		return resp, &Error{Method: method, Err: err}
	}
	return resp, nil
}

// Error is a failed CRI call. Its text is "<method>: <runtime's message>".
type Error struct {
	Method string
	Err    error
}

func (e *Error) Error() string { return e.Method + ": " + Message(e.Err) }

// Unwrap returns the gRPC error.
func (e *Error) Unwrap() error { return e.Err }
