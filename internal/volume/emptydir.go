package volume

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// emptyDirPerm is the mode of an emptyDir (emptydir.go perm).
const emptyDirPerm os.FileMode = 0o777

func (p *Prepared) prepareEmptyDir() error {
	ed := p.vol.EmptyDir
	p.medium = ed.Medium
	switch ed.Medium {
	case corev1.StorageMediumDefault:
		if ed.SizeLimit != nil && !ed.SizeLimit.IsZero() {
			p.notes = append(p.notes, fmt.Sprintf("sizeLimit %s: the kubelet enforces it by evicting the pod when the volume grows past it (eviction manager); podstep does not watch it", ed.SizeLimit.String()))
		}
	case corev1.StorageMediumMemory:
		p.size = p.host.tmpfsSize(p.pod, ed.SizeLimit)
	default:
		return &UnsupportedError{Kind: "emptyDir", Need: fmt.Sprintf("emptyDir medium %q needs a hugetlbfs mount with pre-allocated huge pages; podstep does not set it up", ed.Medium)}
	}
	return nil
}

// wrapTmpfs makes a secret, downwardAPI or projected volume sit on a tmpfs,
// as their plugins wrap an emptyDir with medium Memory (wrappedVolumeSpec).
func (p *Prepared) wrapTmpfs() {
	p.medium = corev1.StorageMediumMemory
	p.size = p.host.tmpfsSize(p.pod, nil)
}

// tmpfsSize mirrors emptydir.go calculateEmptyDirMemorySize (the
// SizeMemoryBackedVolumes feature, GA): the node's allocatable memory,
// lowered to the pod's memory limit, lowered to the volume's sizeLimit.
// 0 means no size= option (the kernel's default, half of RAM).
func (h *Host) tmpfsSize(pod *corev1.Pod, sizeLimit *resource.Quantity) int64 {
	size := h.NodeAllocatable.Memory().Value()
	lower := func(v int64) {
		if v > 0 && (size <= 0 || v <= size) {
			size = v
		}
	}
	lower(podMemoryLimit(pod))
	if sizeLimit != nil {
		lower(sizeLimit.Value())
	}
	return size
}

// podMemoryLimit is the pod cgroup's memory limit as the kubelet computes it
// (cm.ResourceConfigForPod): the sum of the containers' limits, at least the
// largest init container's, and none (0) if a container has no limit.
func podMemoryLimit(pod *corev1.Pod) int64 {
	var sum int64
	for _, c := range pod.Spec.Containers {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok || q.IsZero() {
			return 0
		}
		sum += q.Value()
	}
	var sidecars int64
	for _, c := range pod.Spec.InitContainers {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok || q.IsZero() {
			return 0
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += q.Value()
			sum += q.Value()
			continue
		}
		if v := q.Value() + sidecars; v > sum {
			sum = v
		}
	}
	if pod.Spec.Overhead != nil {
		if q, ok := pod.Spec.Overhead[corev1.ResourceMemory]; ok {
			sum += q.Value()
		}
	}
	return sum
}

// setupEmptyDir mirrors emptyDir.SetUpAt: setupDir (mkdir, then chmod 0777
// despite the umask), and for medium Memory setupTmpfs.
func (p *Prepared) setupEmptyDir(r *Result) error {
	if err := os.MkdirAll(p.dir, emptyDirPerm); err != nil {
		return err
	}
	if fi, err := os.Lstat(p.dir); err != nil {
		return err
	} else if fi.Mode().Perm() != emptyDirPerm {
		if err := os.Chmod(p.dir, emptyDirPerm); err != nil {
			return err
		}
	}
	if p.medium != corev1.StorageMediumMemory {
		return nil
	}
	opts := ""
	if p.size > 0 {
		opts = "size=" + strconv.FormatInt(p.size, 10)
		r.Size = resource.NewQuantity(p.size, resource.BinarySI).String()
	}
	if !p.host.Mount {
		if p.vol.EmptyDir != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("emptyDir %q has medium Memory: the kubelet mounts a tmpfs there (%s); podstep is not root, so it is a plain directory on disk", p.vol.Name, tmpfsDesc(opts)))
		} else {
			r.Notes = append(r.Notes, fmt.Sprintf("the kubelet puts %s volumes on a tmpfs (%s) so their data never reaches the disk; podstep is not root, so this one is on disk", pluginShort(p.plugin), tmpfsDesc(opts)))
		}
		return nil
	}
	if mounted, err := isMountPoint(p.dir); err == nil && mounted {
		r.Tmpfs = true
		return nil
	}
	// The kubelet adds "noswap" when the kernel has it (Linux 6.4+,
	// swap.IsTmpfsNoswapOptionSupported); try it first.
	withNoswap := "noswap"
	if opts != "" {
		withNoswap = opts + ",noswap"
	}
	err := mountTmpfs(p.dir, withNoswap)
	if errors.Is(err, syscall.EINVAL) {
		err = mountTmpfs(p.dir, opts)
	} else if err == nil {
		opts = withNoswap
	}
	if err != nil {
		return fmt.Errorf("mount failed: %w\nMounting command: mount\nMounting arguments: -t tmpfs -o %s tmpfs %s", err, opts, p.dir)
	}
	r.Tmpfs = true
	r.Notes = append(r.Notes, "mounted tmpfs ("+tmpfsDesc(opts)+")")
	return nil
}

func tmpfsDesc(opts string) string {
	if opts == "" {
		return "no size limit: the kernel's default, half of RAM"
	}
	return "-o " + opts
}

func pluginShort(plugin string) string {
	switch plugin {
	case PluginSecret:
		return "secret"
	case PluginDownwardAPI:
		return "downwardAPI"
	case PluginProjected:
		return "projected"
	}
	return plugin
}
