package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/podstep/podstep/internal/fsperm"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/rmtree"
	"github.com/podstep/podstep/internal/sim"
)

// SimDirPrefix names the dir of each run on the simulated runtime, in
// SimBase: its socket, and, unless --root-dir and --log-dir say otherwise,
// its pod dirs (root/) and pod log dirs (logs/). One per run, of mode
// 0700: the runs of many users, and of one user at once, share nothing.
const SimDirPrefix = "podstep-sim-"

// tmpfsMagic is statfs(2)'s f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// SimBase is where a run on the simulated runtime makes its dir: $TMPDIR
// when it is set (the user's choice); else a memory file system, as a
// runtime keeps its state and sockets in /run: $XDG_RUNTIME_DIR (the
// user's own, 0700) or /dev/shm, when either is a tmpfs; else the temp
// dir. Two reasons: a simulated run's files live only as long as the run
// (on this project's ext4, with inodes freed by earlier runs, each of a
// 1,000-container pod's 4,000 new files and dirs paid ext4's
// recently-deleted inode scan: 2 s of system time, issue 34), and the
// Secret and token files its volumes hold never reach a disk, as the
// kubelet keeps them on tmpfs.
func SimBase() string {
	if os.Getenv("TMPDIR") != "" {
		return os.TempDir()
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) && onTmpfs(d) && fsperm.Private(d, false) == nil {
		return d
	}
	if onTmpfs("/dev/shm") {
		return "/dev/shm"
	}
	return os.TempDir()
}

// SimBases are the dirs `podstep cleanup --sim` looks in: SimBase, and
// the temp dir where runs before it made theirs.
func SimBases() []string {
	out := []string{SimBase()}
	if t := os.TempDir(); t != out[0] {
		out = append(out, t)
	}
	return out
}

func onTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}

// SimOwnerFile, in a run's sim dir, records the podstep process it is
// for (mark.Holder): `podstep cleanup --sim` removes the dirs of runs that
// have ended (kept with --keep, or killed).
const SimOwnerFile = "podstep-run.json"

// newSimDir makes a run's sim dir and records its owner.
func newSimDir() (string, error) {
	dir, err := os.MkdirTemp(SimBase(), SimDirPrefix)
	if err != nil {
		return "", fmt.Errorf("start simulated runtime: %w", err)
	}
	data, err := json.Marshal(mark.Self("", true))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, SimOwnerFile), append(data, '\n'), 0o600)
	}
	if err != nil {
		_ = rmtree.RemoveAll(dir)
		return "", fmt.Errorf("start simulated runtime: %w", err)
	}
	return dir, nil
}

// endSimDir removes a run's sim dir at the end, unless it holds a pod kept
// with --keep (a marked pod or log dir): that stays for `podstep cleanup --sim`.
func endSimDir(dir string) {
	os.Remove(filepath.Join(dir, sim.SocketName))
	if len(SimKept(dir)) > 0 {
		return
	}
	_ = rmtree.RemoveAll(dir)
}

// SimKept lists the marked pod and log dirs in a run's sim dir.
func SimKept(dir string) []string {
	var out []string
	for _, pattern := range []string{filepath.Join(dir, "root", "pods", "*", mark.File), filepath.Join(dir, "logs", "*", mark.File)} {
		m, _ := filepath.Glob(pattern)
		for _, f := range m {
			out = append(out, filepath.Dir(f))
		}
	}
	return out
}

// UseRuntime settles the run's dirs once the runtime is chosen: on the
// simulated runtime, the pod dirs and log dirs not given by --root-dir
// and --log-dir go into the run's own sim dir. Then it checks that they
// can be made, before any step runs: a non-root user whose HOME cannot
// be written learns to name --root-dir, not a pod failure at stage dirs;
// a dir another user could change is refused (MakeDir, CheckDir).
func (o *Options) UseRuntime(c *Conn) error {
	if c.Runtime.Simulated && c.Dir != "" {
		if !o.RootDirGiven {
			o.RootDir = filepath.Join(c.Dir, "root")
		}
		if !o.LogDirGiven {
			o.LogDir = filepath.Join(c.Dir, "logs")
		}
	}
	for _, d := range []struct{ flag, dir string }{{"--root-dir", o.RootDir}, {"--log-dir", o.LogDir}} {
		if d.dir == "" {
			continue
		}
		if err := MakeDir(d.flag, d.dir); err != nil {
			return err
		}
	}
	return nil
}

// SimDirs are the dirs the user gave with --root-dir and --log-dir: the
// simulated runtime lets requests name paths there, besides its run's
// sim dir (Endpoints.SimDirs).
func (o *Options) SimDirs() []string {
	var out []string
	if o.RootDirGiven && o.RootDir != "" {
		out = append(out, o.RootDir)
	}
	if o.LogDirGiven && o.LogDir != "" {
		out = append(out, o.LogDir)
	}
	return out
}

// runtimeOf is how the engine records its runtime (steps.Options).
func runtimeOf(rt render.Runtime) (string, bool) { return rt.Endpoint, rt.Simulated }
