package volume

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/podstep/podstep/internal/rmtree"
)

// The atomic writer's names (pkg/volume/util/atomic_writer.go).
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	maxFileNameLen = 255
	maxPathLen     = 4096
)

// atomicWriter writes a payload the way the kubelet's AtomicWriter does for
// a fresh volume:
//
//  1. validate and clean the paths
//  2. make a timestamped dir <dir>/..2006_01_02_15_04_05.<random> (os.MkdirTemp), chmod 0755
//  3. write each file into it (parents MkdirAll 0777 &^ umask), chmod to its mode
//  4. make the user-visible symlinks, one per top-level entry: <name> -> ..data/<name>
//  5. symlink ..data_tmp -> the timestamped dir, rename it to ..data (atomic)
//
// An update (steps 3, 10, 11 of Write: pruning old paths and the old
// timestamped dir) is not needed: podstep sets a volume up once.
type atomicWriter struct {
	dir     string
	context string
	now     func() time.Time
}

func (w atomicWriter) write(payload map[string]fileProjection) error {
	clean := map[string]fileProjection{}
	for p, f := range payload {
		if err := validatePayloadPath(p); err != nil {
			return err
		}
		clean[filepath.Clean(p)] = f
	}
	ts, err := os.MkdirTemp(w.dir, w.now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("%s: unable to create new temp directory: %w", w.context, err)
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	paths := make([]string, 0, len(clean))
	for p := range clean {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := clean[p]
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), os.ModePerm); err != nil {
			return fmt.Errorf("%s: unable to create directory %s: %w", w.context, filepath.Dir(full), err)
		}
		mode := os.FileMode(f.mode)
		if err := os.WriteFile(full, f.data, mode); err != nil {
			return fmt.Errorf("%s: unable to write file %s with mode %v: %w", w.context, full, mode, err)
		}
		// WriteFile's mode is masked by the umask; the kubelet chmods too.
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("%s: unable to write file %s with mode %v: %w", w.context, full, mode, err)
		}
	}
	for _, p := range paths {
		top, _, _ := strings.Cut(p, string(os.PathSeparator))
		link := filepath.Join(w.dir, top)
		if _, err := os.Readlink(link); err != nil && os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil {
				return err
			}
		}
	}
	tmp := filepath.Join(w.dir, newDataDirName)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		_ = rmtree.RemoveAll(ts)
		return fmt.Errorf("%s: error creating symbolic link for atomic update: %w", w.context, err)
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, dataDirName)); err != nil {
		os.Remove(tmp)
		_ = rmtree.RemoveAll(ts)
		return fmt.Errorf("%s: error renaming symbolic link for data directory %s: %w", w.context, tmp, err)
	}
	return nil
}

// validatePayloadPath mirrors atomic_writer.go validatePath, with its texts.
func validatePayloadPath(p string) error {
	if p == "" {
		return fmt.Errorf("invalid path: must not be empty: %q", p)
	}
	if filepath.IsAbs(p) {
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	}
	if len(p) > maxPathLen {
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLen)
	}
	items := strings.Split(p, string(os.PathSeparator))
	for _, it := range items {
		if it == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(it) > maxFileNameLen {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLen)
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}
