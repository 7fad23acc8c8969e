package sim

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/fsperm"
	"github.com/podstep/podstep/internal/imageconfig"
)

// SocketName is the file name of the unix socket Start listens on.
const SocketName = "sim.sock"

// DefaultInitRunTime is how long a container that does not keep running
// (no sleep/httpd/tail/nc -l in its command) runs before exiting.
const DefaultInitRunTime = 150 * time.Millisecond

// Options tunes the simulated runtime. The zero value is valid.
type Options struct {
	// InitRunTime is how long a container whose process exits by itself
	// runs before it exits (default DefaultInitRunTime).
	InitRunTime time.Duration
	// Clock returns the current time (default time.Now). All timestamps
	// the runtime reports and all lazy exits use it.
	Clock func() time.Time
	// Dirs are the directories, besides the one it serves from, under
	// which a request may name a log directory: the run's --root-dir and
	// --log-dir when the user gave them. Any other path is refused
	// (InvalidArgument): the runtime writes only in its own run dirs.
	Dirs []string
	// ImageConfig, when set, reads an image's config from its registry at
	// PullImage, with the request's credentials: ImageStatus then reports
	// the image's user, and a started container runs its entrypoint and
	// cmd (Decide). nil: no registry is asked; only busybox's and the pause
	// image's configs are known.
	ImageConfig *imageconfig.Fetcher
}

// Server is a running simulated CRI runtime: a gRPC server that implements
// the CRI v1 RuntimeService and ImageService on a unix socket.
type Server struct {
	sock     string
	grpc     *grpc.Server
	lis      *net.UnixListener
	svc      *service
	served   chan struct{}
	stopOnce sync.Once
}

// Start starts a simulated runtime listening on dir/sim.sock with default
// Options. dir must exist.
func Start(dir string) (*Server, error) {
	return StartWithOptions(dir, Options{})
}

// SocketMode is the mode of the simulator's socket, whatever the umask:
// its user alone may call it (the runtime writes files as that user).
const SocketMode = 0o600

// StartWithOptions starts a simulated runtime listening on dir/sim.sock.
// dir must exist and be private (fsperm.Private: podstep's user's or
// root's, writable by no one else, in directories no one else can
// change). The socket is SocketMode from its first moment
// (fsperm.ListenUnix). A stale socket file left in dir is replaced.
func StartWithOptions(dir string, o Options) (*Server, error) {
	if o.InitRunTime <= 0 {
		o.InitRunTime = DefaultInitRunTime
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if err := fsperm.Private(abs, false); err != nil {
		return nil, fmt.Errorf("sim: the runtime's dir: %w", err)
	}
	sock := filepath.Join(abs, SocketName)
	if len(sock) > fsperm.MaxSocketPath {
		return nil, fmt.Errorf("sim: socket path %s is %d bytes, longer than the unix socket limit of %d", sock, len(sock), fsperm.MaxSocketPath)
	}
	if fi, err := os.Lstat(sock); err == nil && fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("sim: %s exists and is not a socket", sock)
	}
	lis, err := fsperm.ListenUnix(sock, SocketMode, -1)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	roots := []string{abs}
	for _, d := range o.Dirs {
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			_ = lis.Close()
			return nil, fmt.Errorf("sim: directory %q is not absolute", d)
		}
		roots = append(roots, filepath.Clean(d))
	}
	svc := newService(o)
	svc.roots = roots
	// Stream workers: a call is served on a goroutine that has served
	// others, whose stack has grown already; a new goroutine per call grew
	// its stack through the handler's depth each time (runtime.morestack:
	// about a twentieth of the simulator's CPU for a pod of 1,000
	// containers, issue 34). Busy workers fall back to a new goroutine.
	g := grpc.NewServer(grpc.UnaryInterceptor(svc.delayInterceptor), grpc.NumStreamWorkers(uint32(max(2, runtime.GOMAXPROCS(0)))))
	runtimeapi.RegisterRuntimeServiceServer(g, svc)
	runtimeapi.RegisterImageServiceServer(g, svc)
	s := &Server{sock: sock, grpc: g, lis: lis, svc: svc, served: make(chan struct{})}
	go func() {
		defer close(s.served)
		_ = g.Serve(lis)
	}()
	return s, nil
}

// Endpoint returns the runtime endpoint, "unix://" followed by the absolute
// socket path, suitable for --runtime-endpoint and grpc.NewClient.
func (s *Server) Endpoint() string {
	return "unix://" + s.sock
}

// SocketPath returns the absolute path of the unix socket.
func (s *Server) SocketPath() string {
	return s.sock
}

// Stop gracefully stops the server (in-flight calls finish, waiting at most
// a few seconds) and removes the socket. It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			s.grpc.GracefulStop()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			s.grpc.Stop()
			<-done
		}
		<-s.served
		s.svc.closeAll()
		_ = os.Remove(s.sock)
	})
}

// service implements runtimeapi.RuntimeServiceServer and
// runtimeapi.ImageServiceServer. All state is guarded by mu.
type service struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	opts  Options
	roots []string // the directories requests may name paths in (confine)

	mu             sync.Mutex
	seq            uint64                // per-server counter for IDs and ordering
	sandboxes      map[string]*sandbox   // by ID
	sandboxNames   map[string]string     // reserved sandbox name -> ID
	containers     map[string]*container // by ID
	containerNames map[string]string     // reserved container name -> ID
	images         map[string]*image     // by image ID
	absent         map[string]bool       // normalized refs that are not preloaded (missing-image fault, RemoveImage)
}

func newService(o Options) *service {
	s := &service{
		opts:           o,
		sandboxes:      map[string]*sandbox{},
		sandboxNames:   map[string]string{},
		containers:     map[string]*container{},
		containerNames: map[string]string{},
		images:         map[string]*image{},
		absent:         map[string]bool{},
	}
	for _, ref := range preloadedImages {
		s.addImage(ref, false)
	}
	return s
}

func (s *service) now() time.Time {
	return s.opts.Clock()
}

// Runtime identity reported by Version.
const (
	RuntimeName       = "podstep-sim"
	RuntimeVersion    = "0.1.0"
	RuntimeAPIVersion = "v1"
	kubeAPIVersion    = "0.1.0"
)

// Version implements runtimeapi.RuntimeServiceServer.
func (s *service) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           kubeAPIVersion,
		RuntimeName:       RuntimeName,
		RuntimeVersion:    RuntimeVersion,
		RuntimeApiVersion: RuntimeAPIVersion,
	}, nil
}

// Status implements runtimeapi.RuntimeServiceServer.
func (s *service) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	features := &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: false}
	return &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		}},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{
			{Name: "", Features: features},
			{Name: "runc", Features: features},
		},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}, nil
}

// RuntimeConfig implements runtimeapi.RuntimeServiceServer.
func (s *service) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{
		Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS},
	}, nil
}

// UpdateRuntimeConfig implements runtimeapi.RuntimeServiceServer; the
// kubelet sends the pod CIDR here, which the simulator ignores.
func (s *service) UpdateRuntimeConfig(context.Context, *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// knownHandler reports whether h names a configured runtime handler.
func knownHandler(h string) bool {
	return h == "" || h == "runc"
}

// matchID reports whether id matches the filter value want: equal, or
// a unique-enough prefix as containerd's truncindex accepts.
func matchID(id, want string) bool {
	return want == "" || strings.HasPrefix(id, want)
}

// matchLabels reports whether labels contain every key/value in selector.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
