package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Masks of volume_linux.go changeFilePermission.
const (
	rwMask   fs.FileMode = 0o660
	roMask   fs.FileMode = 0o440
	execMask fs.FileMode = 0o110
)

// setOwnership mirrors volume.SetVolumeOwnership for a pod with an fsGroup:
// every file and dir of the volume (the dir itself included, symlinks not
// followed) gets group fsGroup and the group bits of the mask (read-only
// volumes, as configMap, secret, downwardAPI and projected are: 0440;
// emptyDir: 0660); dirs also get setgid and 0110. hostPath volumes are not
// managed and never get here.
func (p *Prepared) setOwnership(r *Result, readOnly bool) error {
	sc := p.pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return nil
	}
	gid := int(*sc.FSGroup)
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	err := filepath.Walk(p.dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
		m := mask
		if info.IsDir() {
			m |= fs.ModeSetgid | execMask
		}
		return os.Chmod(path, info.Mode()|m)
	})
	if errors.Is(err, syscall.EPERM) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("fsGroup %d: the kubelet gives the volume's files group %d with group read (and setgid dirs); podstep is not root and could not: %v", gid, gid, err))
		return nil
	}
	if err == nil {
		r.Notes = append(r.Notes, fmt.Sprintf("fsGroup %d applied (SetVolumeOwnership): group %d, group bits %04o, setgid dirs", gid, gid, mask))
	}
	return err
}
