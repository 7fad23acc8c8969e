package main

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

// socketOptions are proxy's flags on who may use its socket.
type socketOptions struct {
	group  string
	listen proxy.ListenOptions
}

func (s *socketOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&s.group, "socket-group", "", "the group (name or id) of the unix socket, whose members may use it (mode 0660 whatever the umask; default: podstep's group)")
	f.BoolVar(&s.listen.AllowRemote, "allow-remote", false, "let a tcp:// --listen use an address other than loopback (the CRI has no authentication: a warning is printed)")
}

// validate checks the flags against --listen and resolves the group.
func (s *socketOptions) validate(listen string) error {
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
	if !unix && !s.listen.AllowRemote {
		t, _ := cri.Target(listen)
		if err := proxy.CheckLoopback(strings.TrimPrefix(t, "dns:///")); err != nil {
			return session.Usagef("--listen %s: %v", listen, err)
		}
	}
	return nil
}

// warn says, when --allow-remote opened the CRI to the network, who can
// use it.
func (s *socketOptions) warn(stderr io.Writer, listen string) {
	if !s.listen.AllowRemote {
		return
	}
	t, _ := cri.Target(listen)
	if proxy.CheckLoopback(strings.TrimPrefix(t, "dns:///")) == nil {
		return
	}
	_, _ = fmt.Fprintf(stderr, "podstep: warning: --allow-remote: the CRI at %s has no authentication; anyone who reaches it can run containers as root on this node\n", listen)
}
