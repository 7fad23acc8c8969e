package proxy

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/sim"
)

// shortDir is a temp dir short enough for unix sockets.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// start runs a proxy in front of upstream and returns its endpoint.
func start(t *testing.T, upstream string, h Hooks) string {
	t.Helper()
	s, err := New(upstream, h)
	if err != nil {
		t.Fatal(err)
	}
	ep := "unix://" + filepath.Join(shortDir(t), "p.sock")
	l, err := Listen(ep)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }() // nil once stopped; a failure shows as failed calls
	t.Cleanup(s.Stop)
	return ep
}

// echo is an upstream for methods no CRI names: it answers each message
// with its bytes reversed, sends the caller's traceparent back as a
// header, whether it had a deadline as a trailer, and fails /echo.E/Fail
// with a status of its own.
func echo(t *testing.T) string {
	t.Helper()
	srv := grpc.NewServer(grpc.ForceServerCodecV2(codec{}), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		m, _ := grpc.MethodFromServerStream(ss)
		md, _ := metadata.FromIncomingContext(ss.Context())
		_, hasDeadline := ss.Context().Deadline()
		if err := ss.SetHeader(metadata.Pairs("traceparent-seen", strings.Join(md.Get("traceparent"), ","), "method-seen", m)); err != nil {
			return err
		}
		ss.SetTrailer(metadata.Pairs("deadline-seen", map[bool]string{true: "yes", false: "no"}[hasDeadline]))
		if strings.HasSuffix(m, "/Fail") {
			return status.Error(codes.FailedPrecondition, "echo refuses: name is reserved")
		}
		for {
			f := &frame{}
			if err := ss.RecvMsg(f); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			b := append([]byte(nil), f.payload...)
			for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
				b[i], b[j] = b[j], b[i]
			}
			if err := ss.SendMsg(&frame{b}); err != nil {
				return err
			}
		}
	}))
	p := filepath.Join(shortDir(t), "e.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }() // nil once stopped; a failure shows as failed calls
	t.Cleanup(srv.Stop)
	return "unix://" + p
}

func rawConn(t *testing.T, ep string) *grpc.ClientConn {
	t.Helper()
	target, _ := cri.Target(ep)
	c, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(codec{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestUnknownMethodPasses: a method the CRI does not name goes through as
// bytes, with its metadata and deadline, and its headers, trailers and
// error status come back unchanged.
func TestUnknownMethodPasses(t *testing.T) {
	var seen []string
	ep := start(t, echo(t), Hooks{Done: func(c *Call) { seen = append(seen, c.Name()) }})
	conn := rawConn(t, ep)
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-abc-def-01"), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		method   string
		wantCode codes.Code
		wantMsg  string
	}{
		{"/podstep.future.v9.NewService/Ping", codes.OK, ""},
		{"/podstep.future.v9.NewService/Fail", codes.FailedPrecondition, "echo refuses: name is reserved"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			var header, trailer metadata.MD
			resp := &frame{}
			err := conn.Invoke(ctx, tc.method, &frame{[]byte("abc\x00\xff")}, resp, grpc.Header(&header), grpc.Trailer(&trailer))
			if status.Code(err) != tc.wantCode || (err != nil && status.Convert(err).Message() != tc.wantMsg) {
				t.Fatalf("err = %v, want code %s %q", err, tc.wantCode, tc.wantMsg)
			}
			if err == nil && string(resp.payload) != "\xff\x00cba" {
				t.Errorf("response %q, want the request reversed", resp.payload)
			}
			if got := header.Get("traceparent-seen"); len(got) != 1 || got[0] != "00-abc-def-01" {
				t.Errorf("upstream saw traceparent %q, want 00-abc-def-01", got)
			}
			if got := header.Get("method-seen"); len(got) != 1 || got[0] != tc.method {
				t.Errorf("upstream saw method %q", got)
			}
			if got := trailer.Get("deadline-seen"); len(got) != 1 || got[0] != "yes" {
				t.Errorf("upstream saw deadline %q, want yes", got)
			}
		})
	}
	if len(seen) != 2 {
		t.Errorf("hooks saw %v, want both calls", seen)
	}
}

// TestStreamPasses: a bidirectional stream of an unknown method is pumped
// both ways.
func TestStreamPasses(t *testing.T) {
	ep := start(t, echo(t), Hooks{})
	conn := rawConn(t, ep)
	cs, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/podstep.future.v9.NewService/Chat")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "two", "three"} {
		if err := cs.SendMsg(&frame{[]byte(m)}); err != nil {
			t.Fatal(err)
		}
		r := &frame{}
		if err := cs.RecvMsg(r); err != nil {
			t.Fatal(err)
		}
		if want := reverse(m); string(r.payload) != want {
			t.Errorf("got %q, want %q", r.payload, want)
		}
	}
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := cs.RecvMsg(&frame{}); err != io.EOF {
		t.Errorf("end of stream: %v, want EOF", err)
	}
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// TestCRIThroughProxy: CRI calls through the proxy answer as the runtime
// answers directly (a real gRPC CRI server, podstep's simulated runtime),
// errors and codes included; the hooks see the bytes.
func TestCRIThroughProxy(t *testing.T) {
	srv, err := sim.Start(shortDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	var calls atomic.Int32
	var lastReq []byte
	ep := start(t, srv.Endpoint(), Hooks{Arrived: func(c *Call) { lastReq = c.Request }, Done: func(c *Call) { calls.Add(1) }})
	direct, err := cri.Dial(srv.Endpoint(), "", cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	via, err := cri.Dial(ep, "", cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer via.Close()
	ctx := context.Background()
	a, err1 := direct.Version(ctx)
	b, err2 := via.Version(ctx)
	if err1 != nil || err2 != nil || !proto.Equal(a, b) {
		t.Fatalf("Version direct %v (%v), through the proxy %v (%v)", a, err1, b, err2)
	}
	var want runtimeapi.VersionRequest
	if err := proto.Unmarshal(lastReq, &want); err != nil || want.Version == "" {
		t.Errorf("hook saw request %q (%v)", lastReq, err)
	}
	_, err1 = direct.ContainerStatus(ctx, "nope")
	_, err2 = via.ContainerStatus(ctx, "nope")
	if status.Code(err1) != codes.NotFound || status.Code(err2) != status.Code(err1) || cri.Message(err2) != cri.Message(err1) {
		t.Errorf("ContainerStatus error direct %v, through the proxy %v", err1, err2)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("hooks saw %d calls, want 2", n)
	}
}

// TestGateHolds: a call waits at the gate and reaches the runtime only
// once let go.
func TestGateHolds(t *testing.T) {
	srv, err := sim.Start(shortDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	release := make(chan struct{})
	var sent atomic.Bool
	ep := start(t, srv.Endpoint(), Hooks{
		Gate: func(ctx context.Context, c *Call) { <-release },
		Done: func(c *Call) { sent.Store(!c.Start.IsZero()) },
	})
	via, err := cri.Dial(ep, "", cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer via.Close()
	done := make(chan error, 1)
	go func() { _, err := via.Version(context.Background()); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("Version returned while held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !sent.Load() {
		t.Error("the call was not sent upstream after release")
	}
}
