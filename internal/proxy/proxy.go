package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/podstep/podstep/internal/cri"
)

// MaxMsgSize is the largest message either side may send: the kubelet's own
// limit for CRI messages (maxMsgSize, pkg/kubelet/cri/remote/utils.go in
// k8s.io/cri-client: 16 MiB).
const MaxMsgSize = 16 << 20

// Hooks are how podstep watches (and may hold) the calls. Each may be nil.
// They run on the call's own goroutine, many at once; Arrived and Done
// must return quickly.
type Hooks struct {
	// Arrived is called when a call arrives, with its request.
	Arrived func(*Call)
	// Gate returns when the call may go upstream: at once, or when a
	// person lets it go (`--hold`). ctx is the caller's (its deadline is
	// the kubelet's); the call goes upstream when Gate returns, unless
	// ctx ended.
	Gate func(ctx context.Context, c *Call)
	// Done is called when the answer came back (or the call failed).
	Done func(*Call)
	// Span, when set, opens the call's span (tracing) once Arrived has
	// seen it, before the Gate: ctx is the caller's, with its incoming
	// metadata (the kubelet's traceparent). It returns metadata key/value
	// pairs that replace the caller's in the call going upstream (the W3C
	// trace context of the proxy's own span), and end, called after Done.
	Span func(ctx context.Context, c *Call) (md []string, end func(*Call))
	// Seq, when set, numbers the calls (Call.Seq) instead of the server's
	// own counter: servers in one process (the CRI's and CSI drivers')
	// share one numbering, which the other hooks key on.
	Seq func() uint64
}

// Server forwards every call it gets to the upstream runtime.
type Server struct {
	// Via names what the server stands in front of, for its calls
	// (Call.Via): "" for the CRI runtime, the driver's name for a CSI
	// driver's socket. Set it before Serve.
	Via string

	upstream *grpc.ClientConn
	srv      *grpc.Server
	hooks    Hooks
	seq      atomic.Uint64
}

// New dials the upstream endpoint (unix:///path, /path or tcp://host:port;
// nothing is sent until the first call) and returns a server forwarding to
// it.
func New(upstream string, hooks Hooks) (*Server, error) {
	target, err := cri.Target(upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(codec{}),
			grpc.MaxCallRecvMsgSize(MaxMsgSize), grpc.MaxCallSendMsgSize(MaxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("connect to upstream %s: %w", upstream, err)
	}
	s := &Server{upstream: conn, hooks: hooks}
	s.srv = grpc.NewServer(
		grpc.UnknownServiceHandler(s.handle),
		grpc.ForceServerCodecV2(codec{}),
		// Calls are served by a few long-lived goroutines rather than one
		// new goroutine each: less scheduling per call.
		grpc.NumStreamWorkers(uint32(runtime.NumCPU())),
		grpc.MaxRecvMsgSize(MaxMsgSize), grpc.MaxSendMsgSize(MaxMsgSize))
	return s, nil
}

// Serve answers calls on l until Stop.
func (s *Server) Serve(l net.Listener) error { return s.srv.Serve(l) }

// Stop closes the listener and every call under way, then the upstream
// connection.
func (s *Server) Stop() {
	s.srv.Stop()
	s.upstream.Close()
}

// GracefulStop stops taking calls, waits for those under way (at most d,
// then stops them), and closes the upstream connection.
func (s *Server) GracefulStop(d time.Duration) {
	done := make(chan struct{})
	go func() { s.srv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		s.srv.Stop()
	}
	s.upstream.Close()
}

// handle forwards one call, whatever its method.
func (s *Server) handle(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "podstep proxy: no method in the stream")
	}
	ctx := ss.Context()
	c := &Call{Seq: s.next(), Via: s.Via, Method: method, Arrived: time.Now(), Streaming: !unary()[method]}
	if dl, ok := ctx.Deadline(); ok {
		c.Deadline = dl
	}
	out := outgoing(ctx)
	if c.Streaming {
		return s.pump(ctx, out, ss, c)
	}
	req := &frame{}
	if err := ss.RecvMsg(req); err != nil {
		return err
	}
	c.Request = req.payload
	out, end := s.arrived(ctx, out, c)
	if end != nil {
		defer func() { end(c) }()
	}
	if err := ctx.Err(); err != nil {
		c.Err = status.FromContextError(err).Err()
		s.done(c)
		return c.Err
	}
	var header, trailer metadata.MD
	resp := &frame{}
	c.Start = time.Now()
	err := s.upstream.Invoke(out, method, req, resp, grpc.Header(&header), grpc.Trailer(&trailer))
	c.Duration = time.Since(c.Start)
	if len(header) > 0 {
		// Fails only when the caller's stream is already gone (nothing was
		// sent to it yet): the answer sent below fails the same way.
		_ = ss.SetHeader(header)
	}
	if len(trailer) > 0 {
		ss.SetTrailer(trailer)
	}
	if err != nil {
		c.Err = err
		s.done(c)
		return err
	}
	c.Response = resp.payload
	// Done before the answer goes back: the kubelet's next call (which
	// may depend on this answer) then finds this one's step finished.
	s.done(c)
	return ss.SendMsg(resp)
}

// next is the next call's number.
func (s *Server) next() uint64 {
	if s.hooks.Seq != nil {
		return s.hooks.Seq()
	}
	return s.seq.Add(1)
}

// arrived tells the observer, opens the call's span (out gets its trace
// context in place of the caller's) and waits at the gate.
func (s *Server) arrived(ctx, out context.Context, c *Call) (context.Context, func(*Call)) {
	if s.hooks.Arrived != nil {
		s.hooks.Arrived(c)
	}
	var end func(*Call)
	if s.hooks.Span != nil {
		var md []string
		md, end = s.hooks.Span(ctx, c)
		if len(md) > 0 {
			out = replaceMD(out, md)
		}
	}
	if s.hooks.Gate != nil {
		t := time.Now()
		s.hooks.Gate(ctx, c)
		c.Held = time.Since(t)
	}
	return out, end
}

// replaceMD sets key/value pairs in ctx's outgoing metadata, replacing the
// caller's values of those keys.
func replaceMD(ctx context.Context, kv []string) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	for i := 0; i+1 < len(kv); i += 2 {
		md.Set(kv[i], kv[i+1])
	}
	return metadata.NewOutgoingContext(ctx, md)
}

func (s *Server) done(c *Call) {
	if s.hooks.Done != nil {
		s.hooks.Done(c)
	}
}

// outgoing is the caller's context with its metadata as outgoing
// metadata: traceparent and the rest go upstream, and so does the
// deadline (ctx carries it). Pseudo-headers are gRPC's own.
func outgoing(ctx context.Context) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	md = md.Copy()
	for k := range md {
		if strings.HasPrefix(k, ":") {
			delete(md, k)
		}
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// pump forwards a streaming call (or one the CRI does not name, whose
// shape podstep cannot know) message by message in both directions.
func (s *Server) pump(ctx, out context.Context, ss grpc.ServerStream, c *Call) error {
	out, end := s.arrived(ctx, out, c)
	if end != nil {
		defer func() { end(c) }()
	}
	ctx, cancel := context.WithCancel(out)
	defer cancel()
	c.Start = time.Now()
	cs, err := s.upstream.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, c.Method)
	if err != nil {
		c.Err = err
		s.done(c)
		return err
	}
	// Caller → upstream. An error here (the caller went away) ends the call.
	up := make(chan error, 1)
	go func() {
		first := true
		for {
			m := &frame{}
			if err := ss.RecvMsg(m); err != nil {
				if errors.Is(err, io.EOF) {
					up <- cs.CloseSend()
					return
				}
				up <- err
				return
			}
			if first {
				c.Request, first = m.payload, false
			}
			if err := cs.SendMsg(m); err != nil {
				// The upstream ended the call (io.EOF): its status comes
				// from the other direction.
				up <- nil
				return
			}
		}
	}()
	// Upstream → caller, until the upstream ends the call.
	down := make(chan error, 1)
	go func() {
		first := true
		for {
			m := &frame{}
			if err := cs.RecvMsg(m); err != nil {
				if first {
					// A trailers-only answer: its headers still go back.
					if h, herr := cs.Header(); herr == nil && len(h) > 0 {
						_ = ss.SetHeader(h) // best effort: the call ends with err either way
					}
				}
				down <- err
				return
			}
			if first {
				if h, err := cs.Header(); err == nil && len(h) > 0 {
					_ = ss.SendHeader(h) // on failure, SendMsg below fails too and ends the call
				}
				first = false
			}
			if err := ss.SendMsg(m); err != nil {
				down <- err
				return
			}
		}
	}()
	for {
		select {
		case err := <-up:
			if err == nil {
				up = nil // the caller is done sending; wait for the answer
				continue
			}
			cancel()
			c.Err, c.Duration = err, time.Since(c.Start)
			s.done(c)
			return status.Errorf(codes.Internal, "podstep proxy: reading from the caller: %v", err)
		case err := <-down:
			ss.SetTrailer(cs.Trailer())
			c.Duration = time.Since(c.Start)
			if errors.Is(err, io.EOF) {
				s.done(c)
				return nil
			}
			c.Err = err
			s.done(c)
			return err
		}
	}
}

func methodNames(ms []grpc.MethodDesc) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.MethodName
	}
	return out
}
