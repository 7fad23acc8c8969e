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
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/rmtree"
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
	t, _, err := openRoot(tmp)
	if err != nil {
		return []Dir{{Path: tmp, Why: err.Error()}}
	}
	defer func() { _ = t.Close() }()
	names, err := t.Names()
	if err != nil {
		return []Dir{{Path: tmp, Why: err.Error()}}
	}
	sort.Strings(names)
	var out []Dir
	for _, name := range names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if d := simDir(t, name, ownerFile); d != nil {
			out = append(out, *d)
		}
	}
	return out
}

// simDir removes one sim dir, name in tmp, if it is this user's and its
// run has ended (nil: not one to list). It is opened without following a
// link, its owner and owner file read through the handle.
func simDir(tmp *rmtree.Dir, name, ownerFile string) *Dir {
	path := filepath.Join(tmp.Path, name)
	d, err := tmp.OpenDir(name)
	if err != nil {
		return nil // a link, a file, gone: not a sim dir of this user's
	}
	defer func() { _ = d.Close() }()
	if st, err := d.Stat(); err != nil || int(st.Uid) != os.Geteuid() {
		return nil
	}
	data, err := d.ReadFile(ownerFile, mark.MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		// Not a run's sim dir: a sim-serve child's, which removes itself
		// when it ends; one killed with its parent leaves its socket alone.
		if deadSocketDir(path) {
			r := removeDeadSocketDir(tmp, name)
			return &r
		}
		return nil
	}
	if err != nil {
		return &Dir{Path: path, Why: fmt.Sprintf("%s: %v", ownerFile, err)}
	}
	var h mark.Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return &Dir{Path: path, Why: fmt.Sprintf("%s: %v", ownerFile, err)}
	}
	if h.Alive() && h.PID != os.Getpid() {
		return &Dir{Path: path, Busy: true, Why: "in use by podstep " + h.String()}
	}
	r := removeSimDir(tmp, d, name)
	return &r
}

// removeSimDir removes a run's sim dir, d (name in tmp): first its marked
// pod and log dirs (each checked), then the rest, unless a pod or log dir
// had to be kept. All by handle.
func removeSimDir(tmp, d *rmtree.Dir, name string) Dir {
	path := filepath.Join(tmp.Path, name)
	real, err := d.Real()
	if err != nil {
		return Dir{Path: path, Why: err.Error()}
	}
	var kept []string
	var pods, logDirs []string
	if root, err := d.OpenDir("root"); err == nil {
		if p, err := root.OpenDir("pods"); err == nil {
			pods, _ = p.Names()
			_ = p.Close()
		}
		for _, uid := range pods {
			if err := removeMarked(root, filepath.Join(real, "root"), filepath.Join("pods", uid), uid, true); err != nil {
				kept = append(kept, err.Error())
			}
		}
		_ = root.Close()
	}
	if logs, err := d.OpenDir("logs"); err == nil {
		logDirs, _ = logs.Names()
		for _, l := range logDirs {
			uid := l[strings.LastIndexByte(l, '_')+1:]
			if err := removeMarked(logs, filepath.Join(real, "logs"), l, uid, false); err != nil {
				kept = append(kept, err.Error())
			}
		}
		_ = logs.Close()
	}
	if len(kept) > 0 {
		return Dir{Path: path, Why: strings.Join(kept, "; ")}
	}
	if err := d.RemoveContents(); err != nil {
		return Dir{Path: path, Why: err.Error()}
	}
	if err := tmp.Remove(name); err != nil {
		return Dir{Path: path, Why: err.Error()}
	}
	return Dir{Path: path, Removed: true, Why: fmt.Sprintf("%d pod dir(s), %d log dir(s)", len(pods), len(logDirs))}
}

// Orphans removes the marked pod dirs under root (root/pods/<uid>) and
// pod log dirs under logRoot whose run has ended and whose pod no runtime
// has any more: the holder's runtime was simulated (it ended with the
// run), or present(holder) says its sandbox is gone (its runtime does not
// answer, or answers without it). A dir still held, or whose pod its
// runtime still has, is not touched and not listed; one whose marker
// cannot be read (a link, too large, not podstep's JSON) is listed as kept,
// with why.
//
// Every dir is opened by handle beneath root or logRoot and removed
// through that handle (rmtree), its marker read through it. root and
// logRoot themselves are the caller's to check (session: fsperm.Private).
func Orphans(root, logRoot string, present func(mark.Holder, string) bool) []Dir {
	var out []Dir
	check := func(base *rmtree.Dir, realBase, rel, uid string, pod bool) {
		path := filepath.Join(base.Path, rel)
		m, err := openMarked(base, realBase, rel, uid)
		switch {
		case errors.Is(err, errGone) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR):
			return // not podstep's
		case err != nil:
			out = append(out, Dir{Path: path, Why: err.Error()})
			return
		}
		defer m.close()
		h := m.holder
		if h.PID == 0 {
			// An older podstep's marker: which run made it is unknown, and
			// that run may still be going. Never remove it on a guess.
			out = append(out, Dir{Path: path, Busy: true, Why: "its marker does not say which podstep run made it (an older podstep): not removed, as that run may still be going; remove it by hand once it has ended"})
			return
		}
		if h.Alive() || (!h.Simulated && present(h, uid)) {
			return
		}
		if err := m.remove(pod); err != nil {
			out = append(out, Dir{Path: path, Why: err.Error()})
			return
		}
		out = append(out, Dir{Path: path, Removed: true, Why: "left by podstep " + h.String() + ", which has ended"})
	}
	if r, real, err := openRoot(root); err == nil {
		var pods []string
		if p, err := r.OpenDir("pods"); err == nil {
			pods, _ = p.Names()
			_ = p.Close()
		}
		sort.Strings(pods)
		for _, uid := range pods {
			check(r, real, filepath.Join("pods", uid), uid, true)
		}
		_ = r.Close()
	} else if !errors.Is(err, errGone) {
		out = append(out, Dir{Path: root, Why: err.Error()})
	}
	if l, real, err := openRoot(logRoot); err == nil {
		names, _ := l.Names()
		sort.Strings(names)
		for _, name := range names {
			check(l, real, name, name[strings.LastIndexByte(name, '_')+1:], false)
		}
		_ = l.Close()
	} else if !errors.Is(err, errGone) {
		out = append(out, Dir{Path: logRoot, Why: err.Error()})
	}
	return out
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

func removeDeadSocketDir(tmp *rmtree.Dir, name string) Dir {
	path := filepath.Join(tmp.Path, name)
	if err := tmp.RemoveAll(name); err != nil {
		return Dir{Path: path, Why: err.Error()}
	}
	return Dir{Path: path, Removed: true, Why: "a stopped simulated runtime's socket"}
}
