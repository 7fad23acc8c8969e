package watch

import (
	"fmt"
	"io"
	"os/user"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/session"
)

// SocketFlags are proxy's flags on who may use its socket.
type SocketFlags struct {
	group  string
	listen proxy.ListenOptions
}

func (s *SocketFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&s.group, "socket-group", "", "the group (name or id) of the unix socket, whose members may use it (mode 0660 whatever the umask; default: podstep's group)")
	f.BoolVar(&s.listen.AllowTCP, "allow-tcp", false, "let --listen be tcp://HOST:PORT (loopback only, unless --allow-remote): the CRI has no authentication, so anyone on this machine who can reach the port can run containers as root (a warning is printed each time; the default, a unix socket of mode 0660, is what the kubelet uses)")
	f.BoolVar(&s.listen.AllowRemote, "allow-remote", false, "with --allow-tcp, let a tcp:// --listen use an address other than loopback: anyone who reaches it over the network can run containers as root (a warning is printed)")
}

// validate checks the flags against --listen and resolves the group.
func (s *SocketFlags) validate(listen string) error {
	unix := cri.SocketPath(listen) != ""
	if s.group != "" {
		if !unix {
			return session.Usagef("--socket-group %q: --listen %s is not a unix socket", s.group, listen)
		}
		gid, err := strconv.Atoi(s.group)
		if err != nil {
			g, lerr := user.LookupGroup(s.group)
			if lerr != nil {
				return session.Usagef("--socket-group %q: %v", s.group, lerr)
			}
			gid, _ = strconv.Atoi(g.Gid)
		}
		if gid < 0 {
			return session.Usagef("--socket-group %q: expected a group name or id >= 0", s.group)
		}
		s.listen.Group, s.listen.GroupSet = gid, true
	}
	if s.listen.AllowRemote && unix {
		return session.Usagef("--allow-remote: --listen %s is a unix socket", listen)
	}
	if s.listen.AllowTCP && unix {
		return session.Usagef("--allow-tcp: --listen %s is a unix socket", listen)
	}
	if !unix && !s.listen.AllowTCP {
		return session.Usagef("--listen %s: a tcp:// endpoint needs --allow-tcp: %s; the default is a unix socket (unix:///run/podstep/cri.sock, mode 0660)", listen, proxy.TCPRisk)
	}
	if !unix && !s.listen.AllowRemote {
		t, _ := cri.Target(listen)
		if err := proxy.CheckLoopback(strings.TrimPrefix(t, "dns:///")); err != nil {
			return session.Usagef("--listen %s: %v", listen, err)
		}
	}
	return nil
}

// warn says, each time the proxy listens on TCP, who can use it: every
// local user on loopback (--allow-tcp), anyone on the network with
// --allow-remote.
func (s *SocketFlags) warn(stderr io.Writer, listen string) {
	if cri.SocketPath(listen) != "" {
		return
	}
	t, _ := cri.Target(listen)
	if proxy.CheckLoopback(strings.TrimPrefix(t, "dns:///")) == nil {
		_, _ = fmt.Fprintf(stderr, "podstep: warning: --allow-tcp: the CRI at %s has no authentication; anyone on this machine who can reach it can run containers as root on this node\n", listen)
		return
	}
	_, _ = fmt.Fprintf(stderr, "podstep: warning: --allow-remote: the CRI at %s has no authentication; anyone who reaches it can run containers as root on this node\n", listen)
}
