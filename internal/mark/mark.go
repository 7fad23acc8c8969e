package mark

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/podstep/podstep/internal/rmtree"
)

// ManagedLabel marks everything podstep creates in a runtime, so that
// `podstep cleanup` finds it and kubelets sharing the runtime can be told apart.
const ManagedLabel = "podstep.dev/managed"

// RootDirAnnotation records on the sandbox which root dir holds its pod dir.
const RootDirAnnotation = "podstep.dev/root-dir"

// LogDirAnnotation records on the sandbox where its pod log dir is.
const LogDirAnnotation = "podstep.dev/log-dir"

// File is the marker podstep writes into each directory it makes for a
// pod: the pod dir <root>/pods/<uid> and the pod log dir. `podstep cleanup`
// removes a directory only when it holds this marker, naming the same pod
// and the same path: the sandbox's labels and annotations, which point
// cleanup to the directories, are not trusted alone.
const File = ".podstep-made"

// madeRecord is the marker's content.
type madeRecord struct {
	UID string `json:"uid"`
	Dir string `json:"dir"` // the directory's absolute path, symlinks resolved
	Holder
}

// resolve returns dir as an absolute path with symlinks resolved.
func resolve(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// Dir records in dir that podstep made it for the pod with uid, and which
// process holds it (h: Self).
func Dir(dir, uid string, h Holder) error {
	real, err := resolve(dir)
	if err != nil {
		return err
	}
	data, err := json.Marshal(madeRecord{UID: uid, Dir: real, Holder: h})
	if err != nil {
		return err
	}
	return writeWhole(dir, append(data, '\n'))
}

// writeWhole writes the marker of dir whole: into a temporary file beside
// it, renamed into place, so that a reader (a second run of the pod, a
// cleanup) sees no marker or all of it, never a part.
func writeWhole(dir string, data []byte) error {
	f, err := os.CreateTemp(dir, File+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s marker: %w", File, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, File))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s marker in %s: %w", File, dir, err)
	}
	return nil
}

// Check returns nil when dir may be removed as the directory podstep
// made for the pod with uid: dir, symlinks resolved, lies strictly inside
// root, also resolved; want(rel), when set, accepts its path relative to
// root; and dir holds a marker (a regular file, not a link) naming uid and
// dir itself. Otherwise it says why not.
func Check(root, dir, uid string, want func(rel string) bool) error {
	if !filepath.IsAbs(root) || !filepath.IsAbs(dir) {
		return fmt.Errorf("%s: not an absolute path under %q", dir, root)
	}
	realRoot, err := resolve(root)
	if err != nil {
		return err
	}
	real, err := resolve(dir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not inside %s", real, realRoot)
	}
	if want != nil && !want(rel) {
		return fmt.Errorf("%s is not where podstep puts the pod's directory in %s", real, realRoot)
	}
	d, err := rmtree.Open(real)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	_, err = CheckAt(d, real, uid)
	return err
}

// MaxSize is the most of a marker file podstep reads: one it wrote is a
// few hundred bytes; a larger one (a 4 GiB sparse file) is not read whole,
// and the directory is not podstep's to remove.
const MaxSize = 64 << 10

// noMarker is a directory without a marker: not podstep's (errors.Is
// fs.ErrNotExist).
type noMarker struct{ dir string }

func (e *noMarker) Error() string {
	return fmt.Sprintf("%s holds no %s marker: podstep did not make it", e.dir, File)
}
func (e *noMarker) Is(target error) bool { return target == fs.ErrNotExist }

// ErrPartial is a marker that is there but does not parse: cut short (an
// older podstep wrote it in place, or a run is writing it) or not
// podstep's JSON. A second run reads it as a pod dir being made by another
// run, not as a dir podstep did not make.
var ErrPartial = errors.New("its marker is incomplete (being written)")

// partialMarker is a marker that does not parse (errors.Is ErrPartial).
type partialMarker struct {
	path string
	err  error
}

func (e *partialMarker) Error() string {
	return fmt.Sprintf("%s: %v: %v", e.path, ErrPartial, e.err)
}
func (e *partialMarker) Is(target error) bool { return target == ErrPartial }
func (e *partialMarker) Unwrap() error        { return e.err }

// readAt reads the marker in the open directory d (a regular file, no
// link, at most MaxSize bytes).
func readAt(d *rmtree.Dir) (madeRecord, error) {
	var rec madeRecord
	data, err := d.ReadFile(File, MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, &noMarker{dir: d.Path}
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, &partialMarker{path: filepath.Join(d.Path, File), err: err}
	}
	return rec, nil
}

// CheckAt checks the marker of d, a directory opened by handle beneath
// podstep's root (rmtree.Dir.OpenDir: no link on the way), whose real path
// is real: it must name the pod uid and real itself. It returns the
// holder the marker records. The marker is read through d's handle, so
// what is checked is what a removal through the same handle removes. An
// error wrapping fs.ErrNotExist: d holds no marker (not podstep's).
func CheckAt(d *rmtree.Dir, real, uid string) (Holder, error) {
	rec, err := readAt(d)
	if err != nil {
		return Holder{}, err
	}
	if rec.UID != uid || rec.Dir != real {
		return Holder{}, fmt.Errorf("%s names pod uid %q at %s, not uid %q at %s", filepath.Join(d.Path, File), rec.UID, rec.Dir, uid, real)
	}
	return rec.Holder, nil
}

// ValidUID reports whether uid can name a directory: one path element.
func ValidUID(uid string) bool {
	return uid != "" && uid != "." && uid != ".." && !strings.ContainsAny(uid, `/\`) && !strings.ContainsRune(uid, 0)
}
