package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// volumesStep mirrors volumeManager.WaitForAttachAndMount
// (pkg/kubelet/volumemanager/volume_manager.go): SyncPod blocks until every
// volume the pod names is set up by its plugin under
// pods/<uid>/volumes/kubernetes.io~<plugin>/<name>.
type volumesStep struct{}

func (volumesStep) mirrors() string {
	return "Kubelet.SyncPod → volumeManager.WaitForAttachAndMount (pkg/kubelet/volumemanager/volume_manager.go)"
}

func (volumesStep) explain() string {
	return "The kubelet waits until its volume manager has attached and mounted every volume of the pod. Each plugin makes its volume's directory under pods/<uid>/volumes/kubernetes.io~<plugin>/<name>; containers get those directories as bind mounts later."
}

func (volumesStep) requests(*Engine) []Request { return nil }

func (volumesStep) run(_ context.Context, e *Engine) Result {
	vols := e.pod.Spec.Volumes
	if len(vols) == 0 {
		return ok("the pod has no volumes")
	}
	paths := map[string]string{}
	planned := e.plannedVolumePaths()
	var details []Detail
	for _, v := range vols {
		switch {
		case v.EmptyDir != nil:
			p := planned[v.Name]
			if err := os.MkdirAll(p, 0o777); err != nil {
				return fail("FailedMount", err, fmt.Sprintf("cannot set up emptyDir volume %q", v.Name))
			}
			// MkdirAll honours the umask; emptyDir is world-writable, as the kubelet makes it.
			if err := os.Chmod(p, 0o777); err != nil {
				return fail("FailedMount", err, fmt.Sprintf("cannot set up emptyDir volume %q", v.Name))
			}
			paths[v.Name] = p
			details = append(details, kv(v.Name, "emptyDir at "+p))
		default:
			kind := volumeKind(v.VolumeSource)
			msg := fmt.Sprintf("MountVolume.SetUp failed for volume %q: podstep cannot provide %s volumes yet", v.Name, kind)
			r := fail("FailedMount", fmt.Errorf("%s", msg), msg)
			r.Details = details
			e.tracker.Record("Warning", "FailedMount", "", msg)
			return r
		}
	}
	e.rt.volumePaths = paths
	return ok(fmt.Sprintf("%d volume(s) ready", len(paths)), details...)
}

// plannedVolumePaths is where each volume will be on the host, as the
// kubelet lays them out: pods/<uid>/volumes/kubernetes.io~<plugin>/<name>,
// or the host path itself for hostPath volumes.
func (e *Engine) plannedVolumePaths() map[string]string {
	out := map[string]string{}
	for _, v := range e.pod.Spec.Volumes {
		plugin := ""
		switch {
		case v.HostPath != nil:
			out[v.Name] = v.HostPath.Path
			continue
		case v.EmptyDir != nil:
			plugin = "empty-dir"
		case v.ConfigMap != nil:
			plugin = "configmap"
		case v.Secret != nil:
			plugin = "secret"
		case v.DownwardAPI != nil:
			plugin = "downward-api"
		case v.Projected != nil:
			plugin = "projected"
		default:
			plugin = strings.ToLower(volumeKind(v.VolumeSource))
		}
		out[v.Name] = filepath.Join(e.rt.podDir, "volumes", "kubernetes.io~"+plugin, v.Name)
	}
	return out
}

// volumeKind names the volume source that is set, by its API field name
// (e.g. "persistentVolumeClaim").
func volumeKind(src corev1.VolumeSource) string {
	v := reflect.ValueOf(src)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]
		}
	}
	return "unknown"
}
