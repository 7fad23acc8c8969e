package proxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/fsperm"
)

// SocketMode is the proxy's unix socket's mode, whatever the umask: the
// owner (root, as podstep proxy runs) and one group may use it, as
// containerd's own socket (0660, root:root unless its grpc.gid says).
const SocketMode = 0o660

// DirMode is the mode of the directories Listen makes for the socket.
const DirMode = 0o750

// TCPRisk is what a tcp:// endpoint exposes, for errors and warnings.
const TCPRisk = "the CRI has no authentication: anyone on this machine who can reach the port (loopback included) can run containers as root"

// ListenOptions say who may use the socket the proxy serves. The zero value
// is a unix socket of mode 0660 in the process's group, and no TCP.
type ListenOptions struct {
	// Group, when GroupSet, is the group id given the socket (and the
	// directories Listen makes): its members may use the CRI.
	Group    int
	GroupSet bool
	// AllowTCP lets the endpoint be tcp:// (on loopback unless
	// AllowRemote). The CRI has no authentication: any local user who
	// reaches the port has what the runtime has.
	AllowTCP bool
	// AllowRemote, with AllowTCP, lets a tcp:// endpoint listen on an
	// address other than loopback: whoever reaches the port has the node.
	AllowRemote bool
}

// Listen opens the socket the kubelet will dial with the zero
// ListenOptions.
func Listen(endpoint string) (net.Listener, error) { return ListenOptions{}.Listen(endpoint) }

// Listen opens the socket the kubelet will dial. A unix endpoint's missing
// parent directories are made (DirMode and the group, set on a handle:
// fsperm.MkdirAll) and its directory must be private (fsperm.Private: a
// parent others may write to and not sticky, another user's directory or
// a link on the way is refused); a stale socket file is replaced, and the
// socket gets SocketMode and the group before it has its name: it is
// bound in a private directory (0700) and renamed into place
// (fsperm.ListenUnix), so that no one can connect to it while the umask's
// mode is on it. tcp:// needs AllowTCP and listens on host:port, which
// must be a loopback address unless AllowRemote.
func (o ListenOptions) Listen(endpoint string) (net.Listener, error) {
	if p := cri.SocketPath(endpoint); p != "" {
		l, err := o.listenUnix(p)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", endpoint, err)
		}
		return l, nil
	}
	target, err := cri.Target(endpoint)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if !o.AllowTCP {
		return nil, fmt.Errorf("listen %s: a tcp:// endpoint needs --allow-tcp (%s); the default is a unix socket", endpoint, TCPRisk)
	}
	addr := strings.TrimPrefix(target, "dns:///")
	if !o.AllowRemote {
		if err := CheckLoopback(addr); err != nil {
			return nil, fmt.Errorf("listen %s: %w", endpoint, err)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", endpoint, err)
	}
	return l, nil
}

// CheckLoopback returns an error unless addr (host:port) is on a loopback
// address only: 127.0.0.0/8, ::1 or localhost. An empty host is every
// address.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	what := host
	if host == "" {
		what = "every address"
	}
	return fmt.Errorf("%s is not a loopback address: the CRI has no authentication, whoever reaches the port runs containers as root; listen on 127.0.0.1 or a unix socket, or give --allow-remote", what)
}

func (o ListenOptions) listenUnix(p string) (net.Listener, error) {
	dir := filepath.Dir(p)
	gid := -1
	if o.GroupSet {
		gid = o.Group
	}
	// Made one component at a time, each given its mode and group on
	// its handle, and checked: a parent others may write to (and not
	// sticky), another user's directory or a link planted on the way is
	// refused, never followed.
	if err := fsperm.MkdirAll(dir, DirMode, gid); err != nil {
		return nil, fmt.Errorf("the socket's directory: %w", err)
	}
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", p)
		}
		if c, err := net.DialTimeout("unix", p, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("something already answers on %s", p)
		}
	}
	// Bound in a private directory, given its mode and group there, and
	// renamed over the stale socket, if any.
	ul, err := fsperm.ListenUnix(p, SocketMode, gid)
	if err != nil {
		return nil, err
	}
	return &unixListener{UnixListener: ul, path: p}, nil
}

// unixListener removes the socket by its final name when closed.
type unixListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	})
	return err
}
