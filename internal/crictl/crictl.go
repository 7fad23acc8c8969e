// Package crictl writes a plan's CRI configs as crictl runp and crictl
// create read them (podstep plan --crictl DIR), and says which values a
// user must fill in first (Secret values are masked, subPath bind mounts
// are made by podstep run).
package crictl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/volume"
)

// Write writes the sandbox and container configs as crictl reads
// them: encoding/json of the Go types (crictl decodes with encoding/json,
// so enums are numbers and int64s plain numbers, unlike protojson). All
// files or none: every one is made first in a private directory inside
// dir, and renamed into place once all are written, after dir and every
// target were checked. A dir that is a symbolic link is refused, and so is
// a target that is a link, FIFO, device or directory, unless force (then
// a link is followed, a FIFO or device written into). A file already
// there is replaced by a new one, never written into.
func Write(dir string, all []steps.Step, warn io.Writer, force bool) ([]string, error) {
	type file struct {
		name string
		data []byte
	}
	var files []file
	var notes bytes.Buffer
	write := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		files = append(files, file{name, append(b, '\n')})
		return nil
	}
	out := warn
	defer func() { _, _ = io.Copy(out, &notes) }()
	warn = &notes
	for _, s := range all {
		for _, r := range s.Requests {
			switch m := r.Message.(type) {
			case *runtimeapi.RunPodSandboxRequest:
				if err := write("pod-config.json", m.Config); err != nil {
					return nil, err
				}
			case *runtimeapi.CreateContainerRequest:
				name := m.Config.GetMetadata().GetName() + "-container-config.json"
				if err := write(name, m.Config); err != nil {
					return nil, err
				}
				ctr := m.Config.GetMetadata().GetName()
				for _, mt := range m.Config.GetMounts() {
					if strings.Contains(mt.HostPath, "/"+volume.SubPathsDir+"/") {
						fmt.Fprintf(warn, "note: mount %s of %s is a subPath: its host_path %s is the bind mount `podstep run` makes there (the kubelet's makeMounts); make it, or put <volume>/<subPath> there, before `crictl create`\n",
							mt.ContainerPath, ctr, mt.HostPath)
					}
				}
				for _, kv := range m.Config.GetEnvs() {
					if strings.Contains(string(kv.Value), cri.Mask) {
						fmt.Fprintf(warn, "note: env %s of %s holds a Secret value: it is %s in %s; set it before `crictl create`\n",
							kv.Key, ctr, cri.Mask, name)
					}
				}
				for _, f := range []struct {
					what string
					list []string
				}{{"command", m.Config.GetCommand()}, {"args", m.Config.GetArgs()}} {
					if slices.ContainsFunc(f.list, func(s string) bool { return strings.Contains(s, cri.Mask) }) {
						fmt.Fprintf(warn, "note: the %s of %s hold a Secret value: it is %s in %s; set it before `crictl create`\n",
							f.what, ctr, cri.Mask, name)
					}
				}
				for _, mnt := range m.Config.GetMounts() {
					if strings.Contains(mnt.GetHostPath(), cri.Mask) {
						fmt.Fprintf(warn, "note: the host path of mount %s of %s holds a Secret value: it is %s in %s; set it before `crictl create`\n",
							mnt.GetContainerPath(), ctr, cri.Mask, name)
					}
				}
			}
		}
	}
	var wrote []string
	root, err := openDir(dir, force)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var put []file // into the private directory, then renamed
	for _, f := range files {
		fi, err := root.Lstat(f.name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		case !fi.Mode().IsRegular() && !force:
			return nil, &outfile.UnsafeError{Path: filepath.Join(dir, f.name), What: kind(fi.Mode())}
		case !fi.Mode().IsRegular(): // --force: through the link, into the FIFO or device
			if err := outfile.Write(filepath.Join(dir, f.name), outfile.Options{Force: true}, func(w io.Writer) error {
				_, err := w.Write(f.data)
				return err
			}); err != nil {
				return nil, err
			}
			wrote = append(wrote, filepath.Join(dir, f.name))
			continue
		}
		put = append(put, f)
	}
	tmp := ".podstep-crictl-" + strconv.FormatUint(uint64(rand.Uint32()), 36)
	if err := root.Mkdir(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	defer func() { _ = root.RemoveAll(tmp) }() // empty once all are renamed
	for _, f := range put {
		w, err := root.OpenFile(tmp+"/"+f.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, f.name), err)
		}
		_, err = w.Write(f.data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, f.name), err)
		}
	}
	for _, f := range put {
		if err := root.Rename(tmp+"/"+f.name, f.name); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, f.name), err)
		}
		wrote = append(wrote, filepath.Join(dir, f.name))
	}
	return wrote, nil
}

// openDir opens dir (made when missing, mode 0755 less the umask) as an
// os.Root, after checking with Lstat that it is a directory and not a
// symbolic link (unless force), and that the directory opened is the one
// checked.
func openDir(dir string, force bool) (*os.Root, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, err
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 && !force {
		return nil, fmt.Errorf("%s is a symbolic link: refusing to write into where it points (give the directory itself, or --force)", dir)
	}
	if force {
		if fi, err = os.Stat(dir); err != nil {
			return nil, err
		}
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if got, err := root.Stat("."); err != nil || !os.SameFile(got, fi) {
		root.Close()
		return nil, fmt.Errorf("%s changed while it was opened (replaced by a link?): refusing to write into it", dir)
	}
	return root, nil
}

// kind names a mode that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}
