package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// defaultLocalFSType is the file system a block-device local
// PersistentVolume without spec.local.fsType gets (defaultFSType of
// pkg/volume/local/local.go).
const defaultLocalFSType = "ext4"

// LocalDeviceMountsDir is where the kubelet mounts the block device of a
// local PersistentVolume before any pod uses it, under its root dir
// (generateBlockDeviceBaseGlobalPath of pkg/volume/local/local.go:
// plugins/kubernetes.io/local-volume/mounts). Each PV's device is mounted
// at DIR/<PV name>.
func LocalDeviceMountsDir(rootDir string) string {
	return filepath.Join(rootDir, "plugins", "kubernetes.io", "local-volume", "mounts")
}

// DeviceMount is a local PersistentVolume's block device that the volumes
// stage formatted (when it had no file system) and mounted at Path, for
// the teardown to unmount (the local plugin's UnmountDevice) once the pod's
// bind mount of it is gone.
type DeviceMount struct {
	Device, Path, FSType string
	// Formatted is set when the device had no file system and mkfs made one.
	Formatted bool
}

// deviceTool is the time a blkid, fsck or mkfs of a local volume's device
// may take before podstep stops it (the kubelet has no limit of its own:
// its operation, a goroutine, waits as long as the command runs).
const deviceTool = 2 * time.Minute

// mountLocalDevice is the local plugin's MountDevice for a block device
// (deviceMounter.mountLocalBlockDevice of pkg/volume/local/local.go, with
// mount-utils' SafeFormatAndMount.FormatAndMount): unless path is already
// a mount point, it is made (0750), the device's file system read with
// blkid; an unformatted device is formatted with mkfs.FSTYPE (ext4 and
// ext3: -F -m0; xfs: -f), unless the volume is read-only, which fails; a
// formatted one is checked with fsck -a when read-write; then mounted with
// the PV's mountOptions (and ro). A failed mount removes path again.
func mountLocalDevice(ctx context.Context, pv *corev1.PersistentVolume, device, path string, readOnly bool) (*DeviceMount, []string, error) {
	dm := &DeviceMount{Device: device, Path: path, FSType: defaultLocalFSType}
	if pv.Spec.Local.FSType != nil && *pv.Spec.Local.FSType != "" {
		dm.FSType = *pv.Spec.Local.FSType
	}
	var notes []string
	mounted, err := isMountPoint(path)
	if err != nil {
		return nil, nil, err
	}
	if mounted {
		notes = append(notes, fmt.Sprintf("%s is already mounted at %s: used as it is (the kubelet mounts a local volume's device once for every pod that uses it)", device, path))
		return dm, notes, nil
	}
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, nil, err
	}
	var sys []string
	if readOnly {
		sys = []string{"ro"}
	}
	opts := append(mountOptions(pv, sys), "defaults")
	if err := formatAndMount(ctx, dm, opts, readOnly, &notes); err != nil {
		_ = os.Remove(path)
		return nil, notes, fmt.Errorf("local: failed to mount device %s at %s (fstype: %s), error %w", device, path, dm.FSType, err)
	}
	return dm, notes, nil
}

// mountOptions is MountOptionFromSpec of pkg/volume/util/util.go: the
// PV's mount-options annotation (volume.beta.kubernetes.io/mount-options)
// or else its spec.mountOptions, joined with sys as a sorted set
// (JoinMountOptions); sys alone when the PV has neither.
func mountOptions(pv *corev1.PersistentVolume, sys []string) []string {
	user := pv.Spec.MountOptions
	if mo, ok := pv.Annotations[corev1.MountOptionAnnotation]; ok {
		user = strings.Split(mo, ",")
	} else if len(user) == 0 {
		return sys
	}
	var all []string
	for _, o := range append(slices.Clone(user), sys...) {
		if o != "" && !slices.Contains(all, o) {
			all = append(all, o)
		}
	}
	slices.Sort(all)
	return all
}

// formatAndMount is SafeFormatAndMount.formatAndMountSensitive of
// k8s.io/mount-utils (mount_linux.go), by the same commands.
func formatAndMount(ctx context.Context, dm *DeviceMount, opts []string, readOnly bool, notes *[]string) error {
	existing, err := diskFormat(ctx, dm.Device)
	if err != nil {
		return fmt.Errorf("failed to get disk format of disk %s: %w", dm.Device, err)
	}
	switch {
	case existing == "" && readOnly:
		return fmt.Errorf("cannot mount unformatted disk %s as we are manipulating it in read-only mode", dm.Device)
	case existing == "":
		args := []string{dm.Device}
		switch dm.FSType {
		case "ext4", "ext3":
			args = []string{"-F", "-m0", dm.Device}
		case "xfs":
			args = []string{"-f", dm.Device}
		}
		cmd := "mkfs." + dm.FSType
		if out, err := run(ctx, cmd, args...); err != nil {
			return fmt.Errorf("format of disk %q failed: type:(%q) target:(%q) options:(%q) errcode:(%v) output:(%v) ", dm.Device, dm.FSType, dm.Path, strings.Join(opts, ","), err, firstLines(out, 5))
		}
		dm.Formatted = true
		*notes = append(*notes, fmt.Sprintf("%s had no file system: formatted as %s (%s %s), as the kubelet's SafeFormatAndMount does", dm.Device, dm.FSType, cmd, strings.Join(args, " ")))
	default:
		if existing != dm.FSType {
			*notes = append(*notes, fmt.Sprintf("Configured to mount disk %s as %s but current format is %s, things might break (the kubelet's warning; it mounts it as %s)", dm.Device, dm.FSType, existing, dm.FSType))
		}
		if !readOnly {
			if err := fsck(ctx, dm.Device, notes); err != nil {
				return err
			}
		}
	}
	args := []string{"-t", dm.FSType, "-o", strings.Join(opts, ","), dm.Device, dm.Path}
	if out, err := run(ctx, "mount", args...); err != nil {
		return fmt.Errorf("mount failed: %v\nMounting command: mount\nMounting arguments: %s\nOutput: %s", err, strings.Join(args, " "), firstLines(out, 5))
	}
	*notes = append(*notes, fmt.Sprintf("mounted %s at %s (mount %s; local volume MountDevice)", dm.Device, dm.Path, strings.Join(args, " ")))
	return nil
}

// diskFormat is mount-utils' getDiskFormat: blkid's TYPE, "" for a device
// without one (blkid exits 2), a placeholder for a partitioned one (which
// is never formatted).
func diskFormat(ctx context.Context, device string) (string, error) {
	out, err := run(ctx, "blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o", "export", device)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var fstype, pttype string
	for l := range strings.Lines(string(out)) {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return "", fmt.Errorf("blkid returns invalid output: %s", firstLines(out, 3))
		}
		switch k {
		case "TYPE":
			fstype = v
		case "PTTYPE":
			pttype = v
		}
	}
	if pttype != "" {
		return "unknown data, probably partitions", nil
	}
	return fstype, nil
}

// fsck is checkAndRepairFilesystem: fsck -a; exit 1 (errors corrected) is
// a note, exit 4 (uncorrected) fails the mount, anything else a note.
func fsck(ctx context.Context, device string, notes *[]string) error {
	out, err := run(ctx, "fsck", "-a", device)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.Is(err, exec.ErrNotFound):
		*notes = append(*notes, "'fsck' not found on system; continuing mount without running 'fsck'.")
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		*notes = append(*notes, fmt.Sprintf("Device %s has errors which were corrected by fsck.", device))
	case errors.As(err, &ee) && ee.ExitCode() == 4:
		return fmt.Errorf("'fsck' found errors on device %s but could not correct them: %s", device, firstLines(out, 5))
	default:
		*notes = append(*notes, fmt.Sprintf("fsck on device %s failed with error %v, output: %v", device, err, firstLines(out, 3)))
	}
	return nil
}

// run runs a device tool with deviceTool as its limit and returns its
// combined output.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, deviceTool)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// firstLines is the first n lines of a tool's output, for an error.
func firstLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

// UnmountDevice is the local plugin's UnmountDevice for a block device
// (mount.CleanupMountPoint of its global path): unmount, then remove the
// dir. A path that is not mounted is only removed; a missing one is done.
func UnmountDevice(dm *DeviceMount) error {
	mounted, err := isMountPoint(dm.Path)
	if err != nil {
		return err
	}
	if mounted {
		if err := unmount(dm.Path); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("UnmountDevice failed for %s (%s on %s): %w", dm.Path, dm.Device, dm.FSType, err)
		}
	}
	if err := os.Remove(dm.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("UnmountDevice: remove %s: %w", dm.Path, err)
	}
	return nil
}

// localPathKind is the local plugin's check of the PV's path
// (getGlobalLocalPath): a directory or a block device, nothing else.
func localPathKind(pv *corev1.PersistentVolume) (corev1.HostPathType, error) {
	t, err := fileType(pv.Spec.Local.Path)
	if err != nil {
		return "", err
	}
	if !slices.Contains([]corev1.HostPathType{corev1.HostPathDirectory, corev1.HostPathBlockDev}, t) {
		return t, errors.New("only directory and block device are supported")
	}
	return t, nil
}

// isBlockDevice says whether p is a block device.
func isBlockDevice(p string) bool {
	t, err := fileType(p)
	return err == nil && t == corev1.HostPathBlockDev
}
