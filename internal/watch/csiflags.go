package watch

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/csi"
	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/session"
)

// CSIFlags are proxy's flags for the CSI drivers' node sockets it also
// stands in front of (--csi, --csi-registry), and the takeovers they made.
type CSIFlags struct {
	// Drivers are --csi's: DRIVER (its socket found in Registry) or
	// DRIVER=unix://PATH.
	Drivers []string
	// Registry is --csi-registry: the kubelet's plugins_registry.
	Registry string

	want    map[string]string // driver → socket path ("" = from the registry)
	order   []string
	takes   []*proxy.Takeover
	servers []*proxy.Server
}

func (o *CSIFlags) addFlags(f *pflag.FlagSet) {
	f.Var((*driverList)(&o.Drivers), "csi", "also stand in front of this CSI driver's node socket (repeatable): DRIVER, its socket found as the kubelet finds it (GetInfo on its registration in --csi-registry), or DRIVER=unix://PATH, the socket the kubelet dials. The proxy takes the socket over (the driver's is moved aside to .NAME.podstep-driver beside it, and put back at exit; after a kill, by podstep cleanup): the kubelet's NodeStage/NodePublish/... calls become steps of the pods they are for")
	f.StringVar(&o.Registry, "csi-registry", csi.DefaultRegistryDir, "the kubelet's plugin registration dir (<kubelet root-dir>/plugins_registry), where --csi DRIVER is looked up")
}

// driverList is --csi's value: each use adds one (a comma is no separator).
type driverList []string

func (l *driverList) String() string     { return strings.Join(*l, ",") }
func (l *driverList) Set(s string) error { *l = append(*l, s); return nil }
func (l *driverList) Type() string       { return "DRIVER[=unix://PATH]" }

// validate parses --csi (no socket is touched).
func (o *CSIFlags) validate(listen string) error {
	o.want = map[string]string{}
	for _, s := range o.Drivers {
		name, path := s, ""
		if strings.Contains(s, "=") {
			d, ep, err := csi.ParseEndpoint(s)
			if err != nil {
				return session.Usagef("--csi %v", err)
			}
			name, path = d, strings.TrimPrefix(ep, "unix://")
		} else if _, _, err := csi.ParseEndpoint(s + "=unix:///x"); err != nil {
			return session.Usagef("--csi %q: expected DRIVER (a CSI driver name: at most 63 characters, alphanumerics, '-' and '.') or DRIVER=unix://PATH", safe.Cut(s))
		}
		if _, dup := o.want[name]; dup {
			return session.Usagef("--csi %q: driver %s given twice; expected each driver once", safe.Cut(s), name)
		}
		if path != "" && path == strings.TrimPrefix(listen, "unix://") {
			return session.Usagef("--csi %q: the same socket as --listen %s", safe.Cut(s), listen)
		}
		o.want[name] = path
		o.order = append(o.order, name)
	}
	if len(o.want) > 0 && o.Registry == "" {
		return session.Usagef("--csi-registry is empty: expected the kubelet's plugins_registry dir")
	}
	return nil
}

// resolve finds the socket of each --csi DRIVER in the registration dir
// as the kubelet's plugin watcher does (csi.Discover: GetInfo), and checks
// that no socket is one the kubelet's plugin watcher watches (exit 2).
// Nothing is changed.
func (o *CSIFlags) resolve(ctx context.Context) error {
	var found map[string]csi.Registered
	var notes []string
	for _, name := range o.order {
		path := o.want[name]
		if path == "" {
			if found == nil {
				found, notes = csi.Discover(ctx, o.Registry, 5*time.Second)
			}
			r, ok := found[name]
			if !ok {
				known := make([]string, 0, len(found))
				for n := range found {
					known = append(known, n)
				}
				sort.Strings(known)
				why := "drivers registered: none"
				if len(known) > 0 {
					why = "drivers registered: " + strings.Join(known, ", ")
				}
				if len(notes) > 0 {
					why += "; " + strings.Join(notes, "; ")
				}
				return session.Usagef("--csi %s: no CSI driver of that name is registered in %s (%s); give its node socket with --csi %s=unix:///PATH/TO/csi.sock", name, o.Registry, safe.Line(why), name)
			}
			path = strings.TrimPrefix(r.Endpoint, "unix://")
			if filepath.Clean(path) == filepath.Clean(r.Socket) {
				return session.Usagef("--csi %s: the driver's node socket is its registration socket %s: moving it would deregister the driver from the kubelet (its plugin watcher watches %s)", name, r.Socket, o.Registry)
			}
		}
		if reg, err := filepath.Abs(o.Registry); err == nil && strings.HasPrefix(filepath.Clean(path), reg+string(filepath.Separator)) {
			return session.Usagef("--csi %s: the socket %s is in the kubelet's registration dir %s: the kubelet's plugin watcher would see the proxy's socket as a new registration", name, path, o.Registry)
		}
		o.want[name] = path
	}
	return nil
}

// takeOver takes over each --csi driver's socket (resolved; exit 2 when
// one cannot be); on a failure, those taken already are put back.
func (o *CSIFlags) takeOver(stderr io.Writer) error {
	for _, name := range o.order {
		t, err := proxy.TakeOver(name, o.want[name], proxy.MarkerDir())
		if err != nil {
			o.restore(io.Discard)
			return session.Usagef("--csi %s: %v", name, err)
		}
		o.takes = append(o.takes, t)
		fmt.Fprintf(stderr, "podstep: CSI driver %s: proxy at %s → the driver's socket, moved to %s until podstep exits (after a kill: podstep cleanup puts it back)\n",
			t.Driver, t.Socket, t.Moved)
	}
	return nil
}

// serve starts a proxy server on each taken-over socket, its calls
// watched with hooks (the CRI server's: one numbering, one watcher).
func (o *CSIFlags) serve(hooks proxy.Hooks, stderr io.Writer) error {
	for _, t := range o.takes {
		srv, err := proxy.New(t.Upstream, hooks)
		if err != nil {
			return session.RuntimeErr(err)
		}
		srv.Via = t.Driver
		o.servers = append(o.servers, srv)
		go func() {
			if err := srv.Serve(t.Listener); err != nil && !t.Restored() {
				fmt.Fprintf(stderr, "podstep: CSI driver %s: %v\n", t.Driver, err)
			}
		}()
	}
	return nil
}

// restore puts every driver's socket back, then stops the servers (the
// calls under way finish: the kubelet's next ones go to the driver).
func (o *CSIFlags) restore(stderr io.Writer) {
	for _, t := range o.takes {
		if err := t.Restore(); err != nil {
			fmt.Fprintf(stderr, "podstep: warning: CSI driver %s: %v; podstep cleanup retries\n", t.Driver, err)
		}
	}
	for _, s := range o.servers {
		s.GracefulStop(time.Second)
	}
	o.servers = nil
}
