package proxy

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/podstep/podstep/internal/fsperm"
	"github.com/podstep/podstep/internal/mark"
)

// MarkerDirEnv names another directory for the takeover markers than
// DefaultMarkerDir (tests; a node whose /run is elsewhere). `podstep proxy`
// and `podstep cleanup` read it alike.
const MarkerDirEnv = "PODSTEP_CSI_MARKERS"

// DefaultMarkerDir is where a proxy standing in front of a CSI driver's
// socket writes its marker: on /run, a tmpfs, so that a marker never
// outlives a reboot (after which the driver makes its socket anew); a dir
// of its own (0700), not under /run/podstep, whose mode the CRI socket's
// group needs.
const DefaultMarkerDir = "/run/podstep-csi-proxy"

// MarkerDir is the takeover markers' directory: $PODSTEP_CSI_MARKERS, else
// DefaultMarkerDir.
func MarkerDir() string {
	if d := os.Getenv(MarkerDirEnv); d != "" {
		return d
	}
	return DefaultMarkerDir
}

// movedSuffix ends the name the driver's socket has while a proxy stands
// in front of it: DIR/.NAME.podstep-driver, beside the original, in the
// driver's own directory (no rename across file systems, no new place
// another user could reach).
const movedSuffix = ".podstep-driver"

// MovedPath is where Takeover puts the driver's socket at path.
func MovedPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+movedSuffix)
}

// Marker is what a proxy standing in front of a driver's socket leaves in
// MarkerDir until it put the socket back: enough for `podstep cleanup` to
// put it back after a proxy killed with SIGKILL.
type Marker struct {
	// Driver is the CSI driver's name; Socket the path the kubelet dials
	// (the proxy listens there), Moved where the driver's socket is meanwhile.
	Driver string `json:"driver"`
	Socket string `json:"socket"`
	Moved  string `json:"moved"`
	// Dev and Ino name the proxy's own socket at Socket: what is there
	// when the proxy is gone is put back only while it is still the
	// proxy's (a driver restarted meanwhile made a new one: kept).
	Dev uint64 `json:"dev,omitempty"`
	Ino uint64 `json:"ino,omitempty"`
	// Holder is the proxy process.
	Holder mark.Holder `json:"holder"`
	// file is the marker's path.
	file string
}

// File is the marker's path.
func (m *Marker) File() string { return m.file }

// markerFile is the marker of the socket at path, in dir.
func markerFile(dir, path string) string {
	return filepath.Join(dir, fmt.Sprintf("%x", sha256.Sum256([]byte(path)))[:16]+".json")
}

// Takeover is a driver's socket taken over: the proxy listens at its path,
// the driver's socket is at Upstream until Restore.
type Takeover struct {
	Marker
	// Listener is the proxy's socket at Marker.Socket.
	Listener net.Listener
	// Upstream is the driver's socket where it was moved (unix://PATH).
	Upstream string
	restored atomic.Bool
}

// TakeOver stands in front of driver's node socket at path: it checks
// that no other user can change what path names (its directory Private:
// root's or podstep's user's, writable by no one else; the socket root's
// or the user's), writes the marker in markerDir (made private,
// fsperm.MkdirAll), links the driver's socket to MovedPath(path) (renames
// it where the file system has no hard links) and binds the proxy's
// socket over path in one rename (fsperm.ListenUnix): a kubelet dialling
// path always finds a socket. mode and gid are the
// driver socket's own. Any failure undoes what was done.
func TakeOver(driver, path, markerDir string) (*Takeover, error) {
	path = filepath.Clean(path)
	if err := fsperm.Private(filepath.Dir(path), true); err != nil {
		return nil, fmt.Errorf("CSI driver %s's socket directory: %w", driver, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("CSI driver %s's socket: %w", driver, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return nil, fmt.Errorf("CSI driver %s's socket %s is not a socket (%v)", driver, path, fi.Mode().Type())
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st != nil && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("CSI driver %s's socket %s is owned by uid %d, neither root nor podstep's user: podstep would forward the kubelet's secrets to it", driver, path, st.Uid)
	}
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("CSI driver %s does not answer on %s: %w", driver, path, err)
	}
	_ = c.Close()
	if err := fsperm.MkdirAll(markerDir, 0o700, -1); err != nil {
		return nil, fmt.Errorf("the proxy's marker directory: %w", err)
	}
	mf := markerFile(markerDir, path)
	if old, err := ReadMarker(mf); err == nil {
		if old.Holder.Alive() {
			return nil, fmt.Errorf("CSI driver %s's socket %s: podstep %s already stands in front of it", driver, path, old.Holder)
		}
		return nil, fmt.Errorf("CSI driver %s's socket %s: a podstep proxy that ended without putting it back (%s) left it moved to %s: run podstep cleanup first", driver, path, old.Holder, old.Moved)
	}
	moved := MovedPath(path)
	if _, err := os.Lstat(moved); err == nil {
		return nil, fmt.Errorf("CSI driver %s's socket %s: %s exists and no marker says whose it is: remove it if no podstep proxy runs", driver, path, moved)
	}
	t := &Takeover{Marker: Marker{Driver: driver, Socket: path, Moved: moved, Holder: mark.Self("", false), file: mf}, Upstream: "unix://" + moved}
	if err := t.writeMarker(); err != nil {
		return nil, err
	}
	// A second name for the driver's socket: the driver keeps answering on
	// it while the proxy's socket replaces the first. A file system without
	// hard links: renamed (the path has no socket until the proxy's is
	// there; the kubelet retries a failed call).
	linked := true
	if err := os.Link(path, moved); err != nil {
		if rerr := os.Rename(path, moved); rerr != nil {
			_ = os.Remove(mf)
			return nil, fmt.Errorf("CSI driver %s's socket: move it aside: %w", driver, errors.Join(err, rerr))
		}
		linked = false
	}
	gid := -1
	if st != nil {
		gid = int(st.Gid)
	}
	ul, err := fsperm.ListenUnix(path, fi.Mode().Perm()&0o770, gid)
	if err != nil {
		if linked {
			_ = os.Remove(moved)
		} else {
			_ = os.Rename(moved, path)
		}
		_ = os.Remove(mf)
		return nil, fmt.Errorf("CSI driver %s: listen on %s: %w", driver, path, err)
	}
	t.Listener = ul
	if fi, err := os.Lstat(path); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			t.Dev, t.Ino = uint64(st.Dev), st.Ino
		}
	}
	if err := t.writeMarker(); err != nil {
		_ = t.Restore()
		return nil, err
	}
	return t, nil
}

// writeMarker writes the marker whole (temp file, then rename).
func (t *Takeover) writeMarker() error {
	b, err := json.Marshal(&t.Marker)
	if err != nil {
		return err
	}
	tmp := t.file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("the proxy's marker: %w", err)
	}
	if err := os.Rename(tmp, t.file); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("the proxy's marker: %w", err)
	}
	return nil
}

// Restored says whether Restore was called.
func (t *Takeover) Restored() bool { return t.restored.Load() }

// Restore puts the driver's socket back at its path (the proxy's socket
// is replaced in one rename), closes the proxy's socket and removes the
// marker. Calling it again does nothing.
func (t *Takeover) Restore() error {
	if t.restored.Swap(true) {
		return nil
	}
	err := t.Marker.Restore()
	if t.Listener != nil {
		_ = t.Listener.Close() // unlinks nothing: its name is the driver's again
	}
	return err
}

// Restore puts back what the marker's proxy moved: the driver's socket
// goes back to Socket when what is there is still the proxy's socket (or
// nothing); when the driver made a new socket there meanwhile (it was
// restarted), the moved one, stale, is removed. Then the marker goes.
func (m *Marker) Restore() error {
	var errs []error
	if _, err := os.Lstat(m.Moved); err == nil {
		if m.proxyAt() {
			if err := os.Rename(m.Moved, m.Socket); err != nil {
				errs = append(errs, fmt.Errorf("put CSI driver %s's socket back at %s: %w", m.Driver, m.Socket, err))
			}
		} else if err := os.Remove(m.Moved); err != nil {
			errs = append(errs, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	} else if m.proxyAt() {
		// The driver's socket went away meanwhile: the proxy's goes too.
		_ = os.Remove(m.Socket)
	}
	if len(errs) == 0 && m.file != "" {
		if err := os.Remove(m.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// proxyAt says whether Socket is (still) the proxy's socket, or nothing.
func (m *Marker) proxyAt() bool {
	fi, err := os.Lstat(m.Socket)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || m.Ino == 0 {
		// The proxy died before it noted its socket: the name is its own,
		// or still the driver's (Moved is the same socket then).
		return true
	}
	return uint64(st.Dev) == m.Dev && st.Ino == m.Ino
}

// ReadMarker reads one marker file (at most 64 KiB, no link).
func ReadMarker(file string) (*Marker, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b := make([]byte, 64<<10)
	n, err := f.Read(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	m := &Marker{file: file}
	if err := json.Unmarshal(b[:n], m); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if m.Socket == "" || m.Moved != MovedPath(m.Socket) {
		return nil, fmt.Errorf("%s: not a podstep proxy's marker (socket %q, moved %q)", file, m.Socket, m.Moved)
	}
	return m, nil
}

// Markers reads every marker in dir (none when it does not exist, or when
// this user may not read it); a directory another user could change is
// refused.
func Markers(dir string) ([]*Marker, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := fsperm.Private(dir, false); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrPermission) {
		return nil, nil // root's: another user's cleanup has nothing there it could put back
	}
	if err != nil {
		return nil, err
	}
	var out []*Marker
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		m, err := ReadMarker(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}
