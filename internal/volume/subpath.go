package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SubPathsDir is the pod dir's folder for subPath bind mounts, the
// kubelet's containerSubPathDirectoryName
// (pkg/volume/util/subpath/subpath_linux.go):
// <root>/pods/<uid>/volume-subpaths/<volume>/<container>/<volumeMount index>.
const SubPathsDir = "volume-subpaths"

// SubPath is one volumeMount with a subPath, as makeMounts
// (pkg/kubelet/kubelet_pods.go) hands it to subpath.Interface
// (pkg/volume/util/subpath/subpath.go Subpath).
type SubPath struct {
	// VolumeMountIndex is the volumeMount's index in the container's
	// volumeMounts; it names the bind target.
	VolumeMountIndex int
	// VolumeName is the pod's name for the volume (InnerVolumeSpecName).
	VolumeName string
	// VolumePath is the volume's host path (the plugin's GetPath).
	VolumePath string
	// SubPath is the volumeMount's subPath (subPathExpr expanded), already
	// checked to be relative and free of "..".
	SubPath string
	// PodDir is <root>/pods/<uid>.
	PodDir string
	// ContainerName names the container, a DNS label.
	ContainerName string
}

// Path is <VolumePath>/<SubPath>, the path the user asked for.
func (s SubPath) Path() string { return filepath.Join(s.VolumePath, s.SubPath) }

// Target is where the kubelet bind-mounts the subPath and the host_path it
// sends to the runtime: getSubpathBindTarget
// (pkg/volume/util/subpath/subpath_linux.go).
func (s SubPath) Target() string {
	return filepath.Join(s.PodDir, SubPathsDir, s.VolumeName, s.ContainerName, strconv.Itoa(s.VolumeMountIndex))
}

// SubPathResult says how one subPath was prepared.
type SubPathResult struct {
	// HostPath is the host_path to send in the CRI Mount.
	HostPath string `json:"host_path"`
	// Source is the subPath with its symlinks resolved: what was opened
	// (component by component, never following a symlink) and bound.
	Source string `json:"source"`
	// Created is set when the subPath did not exist and was made as a
	// directory inside the volume (the kubelet's SafeMakeDir).
	Created bool `json:"created,omitempty"`
	// Bound is set when Source is bind-mounted at HostPath (as root);
	// Reused when that bind mount was already there (a restarted container).
	Bound  bool `json:"bound,omitempty"`
	Reused bool `json:"reused,omitempty"`
	// Warning says how podstep differs from the kubelet here (not root).
	Warning string `json:"warning,omitempty"`
}

// SubPathError is a subPath that could not be prepared: the container gets
// CreateContainerConfigError. Its text is the kubelet's makeMounts message,
// which on purpose says nothing of the cause ("Don't pass detailed error
// back to the user because it could give information about host
// filesystem"); Err is the cause, with the kubelet's wording.
type SubPathError struct {
	// Create is set when making the missing subPath dir failed
	// (SafeMakeDir), not when opening and binding it (PrepareSafeSubpath).
	Create    bool
	Volume    string
	Container string
	Err       error
}

func (e *SubPathError) Error() string {
	if e.Create {
		return fmt.Sprintf("failed to create subPath directory for volumeMount %q of container %q", e.Volume, e.Container)
	}
	return fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", e.Volume, e.Container)
}

func (e *SubPathError) Unwrap() error { return e.Err }

// pathWithinBase mirrors mount-utils PathWithinBase: fullPath is base or
// below it, lexically.
func pathWithinBase(fullPath, base string) bool {
	rel, err := filepath.Rel(base, fullPath)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, "../")
}

// CleanSubPaths mirrors subpath_linux.go CleanSubPaths → doCleanSubPaths
// for every volume of the pod whose dir is podDir, as UnmountVolume does
// before a volume's TearDown (operation_generator.go
// GenerateUnmountVolumeFunc): each <volume>/<container>/<index> under
// podDir/volume-subpaths is unmounted and removed (os.Remove: never the
// content of a mount), then the emptied directories. It returns what it
// unmounted. A pod without subPath mounts has no such dir: not an error.
func CleanSubPaths(podDir string) ([]Mount, error) {
	dir, err := filepath.Abs(filepath.Join(podDir, SubPathsDir))
	if err != nil {
		return nil, err
	}
	vols, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", dir, err)
	}
	mounts, err := Mounts(dir)
	if err != nil {
		return nil, err
	}
	var done []Mount
	for _, v := range vols {
		if !v.IsDir() {
			continue
		}
		volDir := filepath.Join(dir, v.Name())
		ctrs, err := os.ReadDir(volDir)
		if err != nil {
			return done, fmt.Errorf("error reading %s: %w", volDir, err)
		}
		for _, c := range ctrs {
			if !c.IsDir() {
				continue
			}
			ctrDir := filepath.Join(volDir, c.Name())
			entries, err := os.ReadDir(ctrDir)
			if err != nil {
				return done, fmt.Errorf("error processing %s: %w", ctrDir, err)
			}
			for _, e := range entries {
				ms, err := cleanMountPoint(filepath.Join(ctrDir, e.Name()), mounts)
				done = append(done, ms...)
				if err != nil {
					return done, fmt.Errorf("error cleaning subpath mount %s: %w", filepath.Join(ctrDir, e.Name()), err)
				}
			}
			if err := os.Remove(ctrDir); err != nil {
				return done, fmt.Errorf("error deleting %s: %w", ctrDir, err)
			}
		}
		if err := os.Remove(volDir); err != nil {
			return done, fmt.Errorf("error deleting %s: %w", volDir, err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrExist) {
		return done, fmt.Errorf("error deleting %s: %w", dir, err)
	}
	return done, nil
}

// cleanMountPoint mirrors mount-utils CleanupMountPoint: unmount path as
// often as something is mounted there, then remove the (now empty) mount
// point. mounts are the mounts known under it (nil: read them).
func cleanMountPoint(path string, mounts []Mount) ([]Mount, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if mounts == nil {
		var err error
		if mounts, err = Mounts(path); err != nil {
			return nil, err
		}
	}
	var done []Mount
	for _, m := range mounts {
		if m.Path != path {
			continue
		}
		if err := unmount(path); err != nil {
			return done, fmt.Errorf("failed to unmount path %s: %w", path, err)
		}
		done = append(done, m)
	}
	return done, os.Remove(path)
}
