package volume

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// nestedMountpoints are the dirs to make in the volume named name for the
// other volumes a container mounts beneath it, relative to the volume's
// dir. Facts from the kubelet's getNestedMountpoints
// (pkg/volume/util/nested_volumes.go): for every container (init, regular,
// ephemeral) and every path where it mounts the volume, each of that
// container's mount paths under it, in sorted order, but none under one
// already taken (a mount at P/a/b beneath one at P/a is the P/a volume's
// business). A mount path beginning with "../" is refused.
func nestedMountpoints(name string, pod *corev1.Pod) ([]string, error) {
	var out []string
	check := func(c *corev1.Container) error {
		var all, mine []string
		for _, m := range c.VolumeMounts {
			p := filepath.Clean(m.MountPath)
			all = append(all, p)
			if m.Name == name {
				mine = append(mine, p)
			}
		}
		slices.Sort(all)
		for _, at := range mine {
			if strings.HasPrefix(at, ".."+string(os.PathSeparator)) {
				return fmt.Errorf("invalid container mount point %v", at)
			}
			prefix := at + string(os.PathSeparator)
			var taken []string
			for _, p := range all {
				if !strings.HasPrefix(p, prefix) || slices.ContainsFunc(taken, func(t string) bool { return strings.HasPrefix(p, t) }) {
					continue
				}
				taken = append(taken, p+string(os.PathSeparator))
				out = append(out, p[len(prefix):])
			}
		}
		return nil
	}
	for i := range pod.Spec.InitContainers {
		if err := check(&pod.Spec.InitContainers[i]); err != nil {
			return nil, err
		}
	}
	for i := range pod.Spec.Containers {
		if err := check(&pod.Spec.Containers[i]); err != nil {
			return nil, err
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if err := check(&c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// makeNestedMountpoints makes, in the volume's dir, the mount points of the
// volumes mounted beneath it (0755), as the configMap, secret, downward API
// and projected plugins' SetUpAt do before they write the payload
// (MakeNestedMountpoints): the runtime then need not make them inside a
// volume it mounts read-only, which it cannot (runc: `make mountpoint ...:
// mkdirat ...: read-only file system`). It returns the dirs it made.
func makeNestedMountpoints(name, dir string, pod *corev1.Pod) ([]string, error) {
	dirs, err := nestedMountpoints(name, pod)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("unable to create nested volume mountpoints: %w", err)
		}
	}
	return dirs, nil
}
