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
)

// SocketMode is the proxy's unix socket's mode, whatever the umask: the
// owner (root, as podstep proxy runs) and one group may use it, as
// containerd's own socket (0660, root:root unless its grpc.gid says).
const SocketMode = 0o660

// DirMode is the mode of the directories Listen makes for the socket.
const DirMode = 0o750

// ListenOptions say who may use the socket the proxy serves. The zero value
// is a unix socket of mode 0660 in the process's group, and TCP on loopback
// only.
type ListenOptions struct {
	// Group, when GroupSet, is the group id given the socket (and the
	// directories Listen makes): its members may use the CRI.
	Group    int
	GroupSet bool
	// AllowRemote lets a tcp:// endpoint listen on an address other than
	// loopback. The CRI has no authentication: whoever reaches the port
	// has the node.
	AllowRemote bool
}

// Listen opens the socket the kubelet will dial with the zero
// ListenOptions.
func Listen(endpoint string) (net.Listener, error) { return ListenOptions{}.Listen(endpoint) }

// Listen opens the socket the kubelet will dial. A unix endpoint's missing
// parent directories are made (DirMode), a stale socket file replaced, and
// the socket gets SocketMode and the group before it has its name: it is
// bound in a private directory (0700) and renamed into place, so that no
// one can connect to it while the umask's mode is on it. tcp:// listens on
// host:port, which must be a loopback address unless AllowRemote.
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
	if err := o.mkdirs(dir); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", p)
		}
		if c, err := net.DialTimeout("unix", p, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("something already answers on %s", p)
		}
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("remove the stale socket: %w", err)
		}
	}
	private, err := os.MkdirTemp(dir, ".podstep-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(private) }() // empty once renamed; best effort
	tmp := filepath.Join(private, "s")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // it is unlinked by its final name
	gid := -1
	if o.GroupSet {
		gid = o.Group
	}
	err = os.Chmod(tmp, SocketMode)
	if err == nil && gid >= 0 {
		err = os.Lchown(tmp, -1, gid)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	return &unixListener{UnixListener: ul, path: p}, nil
}

// mkdirs makes dir and its missing parents, each DirMode (and the group),
// whatever the umask; directories that exist are left as they are.
func (o ListenOptions) mkdirs(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, os.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := os.Mkdir(d, DirMode); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := os.Chmod(d, DirMode); err != nil {
			return err
		}
		if o.GroupSet {
			if err := os.Lchown(d, -1, o.Group); err != nil {
				return err
			}
		}
	}
	return nil
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
