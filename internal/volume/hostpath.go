package volume

import (
	"fmt"
	"io/fs"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// prepareHostPath runs the kubelet's hostPath checks (hostPathMounter.SetUp
// → checkType) that need nothing created: the path must have no "..", and
// an existing path must have the type's file type. A missing *OrCreate path
// is created by applyHostPath.
func prepareHostPath(hp *corev1.HostPathVolumeSource) error {
	for _, part := range strings.Split(hp.Path, "/") {
		if part == ".." {
			return &HostPathError{Path: hp.Path, Msg: "invalid HostPath `" + hp.Path + "`: must not contain '..'"} // the kubelet's words
		}
	}
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	switch t {
	case corev1.HostPathUnset:
		return nil
	case corev1.HostPathDirectoryOrCreate, corev1.HostPathFileOrCreate:
		if !exists(hp.Path) {
			return nil
		}
	}
	return checkType(hp.Path, t)
}

// applyHostPath creates a missing DirectoryOrCreate (MkdirAll 0755, the
// umask applies) or FileOrCreate path (open O_CREATE 0644: the parent must
// exist), then checks the type again as the kubelet does (its fallthrough).
func applyHostPath(hp *corev1.HostPathVolumeSource) (created bool, err error) {
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	switch t {
	case corev1.HostPathUnset:
		return false, nil
	case corev1.HostPathDirectoryOrCreate:
		if !exists(hp.Path) {
			if err := os.MkdirAll(hp.Path, 0o755); err != nil && !os.IsExist(err) {
				return false, err
			}
			created = true
		}
	case corev1.HostPathFileOrCreate:
		if !exists(hp.Path) {
			f, err := os.OpenFile(hp.Path, os.O_CREATE, 0o644)
			if f != nil {
				f.Close()
			}
			if err != nil && !os.IsExist(err) {
				return false, err
			}
			created = true
		}
	}
	return created, checkType(hp.Path, t)
}

// exists is hostutil PathExists (os.Stat follows symlinks); any error is "no".
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// checkType mirrors host_path.go checkType / typeMatchedOrError.
func checkType(p string, t corev1.HostPathType) error {
	var want corev1.HostPathType
	var desc string
	switch t {
	case corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory:
		want, desc = corev1.HostPathDirectory, "directory"
	case corev1.HostPathFileOrCreate, corev1.HostPathFile:
		want, desc = corev1.HostPathFile, "file"
	case corev1.HostPathSocket:
		want, desc = corev1.HostPathSocket, "socket file"
	case corev1.HostPathCharDev:
		want, desc = corev1.HostPathCharDev, "character device"
	case corev1.HostPathBlockDev:
		want, desc = corev1.HostPathBlockDev, "block device"
	default:
		return &HostPathError{Path: p, Msg: fmt.Sprintf("%s is an invalid volume type", t)}
	}
	if !exists(p) {
		return &HostPathError{Path: p, Msg: fmt.Sprintf("hostPath %s doesn't exist", p)}
	}
	got, err := fileType(p)
	if err != nil {
		return &HostPathError{Path: p, Err: err, Msg: fmt.Sprintf("hostPath type check failed, %s is not a %s, unable to determine its type: %v", p, desc, err)}
	}
	if got != want {
		return &HostPathError{Path: p, Msg: fmt.Sprintf("hostPath type check failed: %s is not a %s, it's a %s", p, desc, got)}
	}
	return nil
}

// fileType is hostutil getFileType: Directory, File, Socket, CharDevice or
// BlockDevice (the names of corev1.HostPathType).
func fileType(p string) (corev1.HostPathType, error) {
	info, err := os.Stat(p)
	if os.IsNotExist(err) {
		return "", fmt.Errorf("path %q does not exist", p)
	}
	if err != nil {
		return "", err
	}
	m := info.Mode()
	switch {
	case m.IsDir():
		return corev1.HostPathDirectory, nil
	case m.IsRegular():
		return corev1.HostPathFile, nil
	case m&fs.ModeSocket != 0:
		return corev1.HostPathSocket, nil
	case m&fs.ModeDevice != 0:
		if m&fs.ModeCharDevice != 0 {
			return corev1.HostPathCharDev, nil
		}
		return corev1.HostPathBlockDev, nil
	}
	return "", fmt.Errorf("only recognise file, directory, socket, block device and character device")
}
