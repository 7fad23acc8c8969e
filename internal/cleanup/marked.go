package cleanup

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/rmtree"
	"github.com/podstep/podstep/internal/volume"
)

// errGone: the directory to remove (or the one above it) is not there.
var errGone = errors.New("not there")

// marked is a pod or pod log dir opened by handle beneath its root, its
// marker read through that handle: what is removed is what was checked,
// whatever is renamed or replaced by a link on the way meanwhile.
type marked struct {
	parent, dir *rmtree.Dir
	name        string
	path        string // its path, resolved when opened (messages, volume teardown)
	holder      mark.Holder
}

// openMarked opens rel beneath root (whose real path is realRoot),
// following no link and crossing no mount, and checks its marker: it must
// name the pod uid and the directory's own path (realRoot/rel). errGone:
// the directory is not there. An error wrapping fs.ErrNotExist otherwise:
// it holds no marker.
func openMarked(root *rmtree.Dir, realRoot, rel, uid string) (*marked, error) {
	parentRel, name := filepath.Dir(rel), filepath.Base(rel)
	parent, err := root.OpenDir(parentRel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errGone
	}
	if err != nil {
		return nil, err
	}
	dir, err := parent.OpenDir(name)
	if errors.Is(err, fs.ErrNotExist) {
		_ = parent.Close()
		return nil, errGone
	}
	if err != nil {
		_ = parent.Close()
		return nil, err
	}
	m := &marked{parent: parent, dir: dir, name: name, path: filepath.Join(realRoot, rel)}
	if m.holder, err = mark.CheckAt(dir, m.path, uid); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

func (m *marked) close() {
	_ = m.dir.Close()
	_ = m.parent.Close()
}

// remove removes the directory through its handles: the pod's volumes
// unmounted first (pod), then everything beneath it, then it, empty.
func (m *marked) remove(pod bool) error {
	if pod {
		// The volumes are unmounted by path (umount has no handle form);
		// the root is the user's own (fsperm.Private), so no one else can
		// change the path between.
		if _, err := volume.TeardownPod(m.path); err != nil {
			return err
		}
	}
	if err := m.dir.RemoveContents(); err != nil {
		return err
	}
	if err := m.parent.Remove(m.name); err != nil {
		return fmt.Errorf("remove %s: %w", m.path, err)
	}
	return nil
}

// openRoot opens a root podstep's dirs lie beneath (a --root-dir, a
// --log-dir, a run's sim dir) and its real path. errGone: not there.
func openRoot(path string) (*rmtree.Dir, string, error) {
	d, err := rmtree.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", errGone
	}
	if err != nil {
		return nil, "", err
	}
	real, err := d.Real()
	if err != nil {
		_ = d.Close()
		return nil, "", err
	}
	return d, real, nil
}

// removeMarked removes rel beneath root (real path realRoot), podstep's
// for the pod uid (its marker checked), unmounting what the pod's volumes
// mounted first (pod). A directory not there is no error.
func removeMarked(root *rmtree.Dir, realRoot, rel, uid string, pod bool) error {
	m, err := openMarked(root, realRoot, rel, uid)
	if errors.Is(err, errGone) {
		return nil
	}
	if err != nil {
		return err
	}
	defer m.close()
	return m.remove(pod)
}
