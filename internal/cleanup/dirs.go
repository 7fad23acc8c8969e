package cleanup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/volume"
)

// Dir is a directory podstep left without a runtime to remove it with:
// a run's sim dir, or a pod or pod log dir whose runtime is gone.
type Dir struct {
	Path    string
	Removed bool
	Busy    bool   // a run still going holds it: not touched, not a failure
	Why     string // why it was kept, or what it was
}

// SimDirs removes what runs on the simulated runtime left in tmp (the
// dirs named prefix+…, each with its owner file, see session.SimDirPrefix):
// the pod and log dirs of a pod kept with --keep, or of a run that was
// killed. Only this user's dirs, and only those whose run has ended (its
// owner process is gone: the simulated runtime went with it); the pod and
// log dirs inside only when they hold podstep's marker (mark.Check). A dir
// of that name with no owner file is removed only when it holds nothing but
// a socket nobody listens on (a killed `sim-serve` child's).
func SimDirs(tmp, prefix, ownerFile string) []Dir {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return []Dir{{Path: tmp, Why: err.Error()}}
	}
	var out []Dir
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if !ownedByMe(dir) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			// Not a run's sim dir: a sim-serve child's, which removes itself
			// when it ends; one killed with its parent leaves its socket alone.
			if deadSocketDir(dir) {
				out = append(out, removeDeadSocketDir(dir))
			}
			continue
		}
		var h mark.Holder
		if err := json.Unmarshal(data, &h); err != nil {
			out = append(out, Dir{Path: dir, Why: fmt.Sprintf("%s: %v", ownerFile, err)})
			continue
		}
		if h.Alive() && h.PID != os.Getpid() {
			out = append(out, Dir{Path: dir, Busy: true, Why: "in use by podstep " + h.String()})
			continue
		}
		out = append(out, removeSimDir(dir))
	}
	return out
}

// removeSimDir removes a run's sim dir: first its marked pod and log dirs
// (each checked), then the rest, unless a pod or log dir had to be kept.
func removeSimDir(dir string) Dir {
	var kept []string
	root, logs := filepath.Join(dir, "root"), filepath.Join(dir, "logs")
	pods, _ := os.ReadDir(filepath.Join(root, "pods"))
	for _, p := range pods {
		d := filepath.Join(root, "pods", p.Name())
		uid := p.Name()
		if err := removeMarked(root, d, uid, func(rel string) bool { return rel == filepath.Join("pods", uid) }, true); err != nil {
			kept = append(kept, err.Error())
		}
	}
	logDirs, _ := os.ReadDir(logs)
	for _, l := range logDirs {
		d := filepath.Join(logs, l.Name())
		uid := l.Name()[strings.LastIndexByte(l.Name(), '_')+1:]
		if err := removeMarked(logs, d, uid, func(rel string) bool { return rel == l.Name() }, false); err != nil {
			kept = append(kept, err.Error())
		}
	}
	if len(kept) > 0 {
		return Dir{Path: dir, Why: strings.Join(kept, "; ")}
	}
	if err := os.RemoveAll(dir); err != nil {
		return Dir{Path: dir, Why: err.Error()}
	}
	return Dir{Path: dir, Removed: true, Why: fmt.Sprintf("%d pod dir(s), %d log dir(s)", len(pods), len(logDirs))}
}

// removeMarked removes dir, podstep's for the pod uid under root (checked
// by mark.Check), unmounting what the pod's volumes mounted first (pod).
func removeMarked(root, dir, uid string, want func(string) bool, pod bool) error {
	if err := mark.Check(root, dir, uid, want); err != nil {
		return err
	}
	if pod {
		if _, err := volume.TeardownPod(dir); err != nil {
			return err
		}
	}
	return os.RemoveAll(dir)
}

// Orphans removes the marked pod dirs under root (root/pods/<uid>) and
// pod log dirs under logRoot whose run has ended and whose pod no runtime
// has any more: the holder's runtime was simulated (it ended with the
// run), or present(holder) says its sandbox is gone (its runtime does not
// answer, or answers without it). A dir still held, or whose pod its
// runtime still has, is not touched and not listed.
func Orphans(root, logRoot string, present func(mark.Holder, string) bool) []Dir {
	var out []Dir
	check := func(base, dir, uid string, want func(string) bool, pod bool) {
		h, err := mark.ReadHolder(dir)
		if err != nil {
			return // not podstep's
		}
		if h.PID == 0 {
			// An older podstep's marker: which run made it is unknown, and
			// that run may still be going. Never remove it on a guess.
			out = append(out, Dir{Path: dir, Busy: true, Why: "its marker does not say which podstep run made it (an older podstep): not removed, as that run may still be going; remove it by hand once it has ended"})
			return
		}
		if h.Alive() || (!h.Simulated && present(h, uid)) {
			return
		}
		if err := removeMarked(base, dir, uid, want, pod); err != nil {
			out = append(out, Dir{Path: dir, Why: err.Error()})
			return
		}
		out = append(out, Dir{Path: dir, Removed: true, Why: "left by podstep " + h.String() + ", which has ended"})
	}
	pods, _ := os.ReadDir(filepath.Join(root, "pods"))
	for _, p := range pods {
		uid := p.Name()
		check(root, filepath.Join(root, "pods", uid), uid, func(rel string) bool { return rel == filepath.Join("pods", uid) }, true)
	}
	logDirs, _ := os.ReadDir(logRoot)
	for _, l := range logDirs {
		name := l.Name()
		check(logRoot, filepath.Join(logRoot, name), name[strings.LastIndexByte(name, '_')+1:], func(rel string) bool { return rel == name }, false)
	}
	return out
}

// ownedByMe reports whether dir belongs to this process's user.
func ownedByMe(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// WriteDirs prints a line per dir and returns how many were kept.
func WriteDirs(w io.Writer, dirs []Dir) (left int) {
	for _, d := range dirs {
		switch {
		case d.Removed:
			fmt.Fprintf(w, "✓ removed %s (%s)\n", d.Path, d.Why)
		case d.Busy:
			fmt.Fprintf(w, "- left %s: %s\n", d.Path, d.Why)
		default:
			left++
			fmt.Fprintf(w, "✗ kept %s: %s\n", d.Path, d.Why)
		}
	}
	return left
}

// deadSocketDir: dir holds one thing, a unix socket older than a few
// seconds (not one a starting child has bound but not yet listens on) that
// nothing listens on (a connection is refused): what a killed sim-serve
// child leaves.
func deadSocketDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Type()&fs.ModeSocket == 0 {
		return false
	}
	if info, err := entries[0].Info(); err != nil || time.Since(info.ModTime()) < 5*time.Second {
		return false
	}
	c, err := net.DialTimeout("unix", filepath.Join(dir, entries[0].Name()), time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func removeDeadSocketDir(dir string) Dir {
	if err := os.RemoveAll(dir); err != nil {
		return Dir{Path: dir, Why: err.Error()}
	}
	return Dir{Path: dir, Removed: true, Why: "a stopped simulated runtime's socket"}
}
