package session

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/podstep/podstep/internal/cleanup"
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/proxy"
)

// CleanupOptions are `podstep cleanup`'s settings.
type CleanupOptions struct {
	Endpoints
	RootDir, LogDir string // --root-dir, --log-dir: where orphaned pod dirs are looked for
	// RootDirGiven, LogDirGiven: --root-dir, --log-dir were given (with
	// --sim, only the dirs given are looked in, besides the temp dir).
	RootDirGiven, LogDirGiven bool
	Grace                     int64 // --grace-period
}

// Cleanup is `podstep cleanup`: with --sim, the leftovers of this user's
// runs on the simulated runtime (cleanup.SimDirs); else the podstep pods
// of the chosen runtime (cleanup.Run), then the pod and log dirs whose
// runtime is gone (cleanup.Orphans: their run ended, and no runtime has
// their pod) and the simulated runtime's leftovers. No runtime answering
// is no error: what is on disk is still removed. Anything not removed is
// ExitLeftBehind. A --root-dir or --log-dir another user could change is
// refused first (CheckDir, exit 2): nothing is removed.
func Cleanup(ctx context.Context, o CleanupOptions, w io.Writer) error {
	for _, d := range []struct{ flag, dir string }{{"--root-dir", o.RootDir}, {"--log-dir", o.LogDir}} {
		if d.dir == "" {
			continue
		}
		if err := CheckDir(d.flag, d.dir); err != nil {
			return err
		}
	}
	var simDirs []cleanup.Dir
	bases := SimBases()
	for _, b := range bases {
		simDirs = append(simDirs, cleanup.SimDirs(b, SimDirPrefix, SimOwnerFile)...)
	}
	if o.Sim {
		// A run on the simulated runtime with --root-dir or --log-dir kept
		// its pod there, not in its sim dir: the dirs given are cleaned
		// too (never ignored). Their pods' runtime ended with their run;
		// a pod of a real runtime there is left to cleanup without --sim.
		var root, logRoot string
		if o.RootDirGiven {
			root = o.RootDir
		}
		if o.LogDirGiven {
			logRoot = o.LogDir
		}
		dirs := simDirs
		if root != "" || logRoot != "" {
			dirs = append(cleanup.Orphans(root, logRoot, func(mark.Holder, string) bool { return true }), simDirs...)
		}
		if len(dirs) == 0 {
			where := bases
			for _, d := range []string{root, logRoot} {
				if d != "" {
					where = append(where, d)
				}
			}
			fmt.Fprintln(w, "nothing to clean: no run on the simulated runtime left anything in "+strings.Join(where, ", "))
		}
		return leftErr(0, 0, cleanup.WriteDirs(w, dirs), len(dirs))
	}
	// CSI drivers' sockets a killed `podstep proxy --csi` left moved aside.
	csiLeft := cleanup.CSISockets(w, proxy.MarkerDir())
	endpoint, _, err := Choose(ctx, o.Named(), "", o.ProbeTimeout())
	if err != nil {
		return err
	}
	// Shadow runtimes first: a pod dir of a run on one is then an orphan.
	shadows := cleanup.Shadows(ctx, ShadowBase())
	var (
		left, pods int
		uids       map[string]bool
	)
	if endpoint != "" {
		c, err := cri.Dial(endpoint, "", cri.Options{Timeout: o.Timeout})
		if err != nil {
			return RuntimeErr(err)
		}
		defer c.Close()
		done, err := cleanup.Run(ctx, c, o.Grace)
		if err != nil {
			return RuntimeErr(err)
		}
		pods = len(done)
		left = cleanup.Write(w, endpoint, done)
		if uids, err = cleanup.UIDs(ctx, c); err != nil {
			return RuntimeErr(err)
		}
	}
	present := func(h mark.Holder, uid string) bool {
		if h.Runtime != "" && (endpoint == "" || !sameSocket(h.Runtime, endpoint)) {
			// Another runtime: its pod is its own cleanup's, while it answers.
			return cri.Probe(ctx, h.Runtime, o.ProbeTimeout()) == nil
		}
		return uids[uid]
	}
	dirs := append(append(shadows, cleanup.Orphans(o.RootDir, o.LogDir, present)...), simDirs...)
	// Then the local volumes' device mounts those pod dirs were the last to use.
	dirs = append(dirs, cleanup.DeviceMounts(o.RootDir)...)
	if endpoint == "" && len(dirs) == 0 {
		fmt.Fprintf(w, "nothing to clean: no runtime answered at %s, and no pod dir under %s or %s is left by a run that ended\n", WellKnown(), o.RootDir, o.LogDir)
	}
	if err := leftErr(left, pods, cleanup.WriteDirs(w, dirs), len(dirs)); err != nil || csiLeft == 0 {
		return err
	}
	return &Error{Code: ExitLeftBehind, Err: fmt.Errorf("cleanup: %d CSI driver socket(s) not put back", csiLeft)}
}

// leftErr is ExitLeftBehind when a pod or a dir was not removed.
func leftErr(leftPods, pods, leftDirs, dirs int) error {
	var parts []string
	if leftPods > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d pods not fully removed", leftPods, pods))
	}
	if leftDirs > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d dirs kept", leftDirs, dirs))
	}
	if len(parts) == 0 {
		return nil
	}
	return &Error{Code: ExitLeftBehind, Err: fmt.Errorf("cleanup: %s", strings.Join(parts, ", "))}
}
