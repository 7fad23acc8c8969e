package steps

import (
	"errors"
	"fmt"

	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/volume"
)

// subPathLog collects what the create step's subPath preparation did, for
// the step's details and warnings.
type subPathLog struct {
	details  []Detail
	warnings []string
	bound    int   // bind-mounted (or reused)
	checked  int   // checked only (not root)
	err      error // the refusal, if one was
}

// summary is the create step's summary suffix: ", 2 subPaths bind-mounted".
func (l *subPathLog) summary() string {
	switch {
	case l.bound > 0:
		return ", " + plural(l.bound, "subPath", "subPaths") + " bind-mounted"
	case l.checked > 0:
		return ", " + plural(l.checked, "subPath", "subPaths") + " checked (not bind-mounted: not root)"
	}
	return ""
}

// volumeSubPath is sp for the volume package: the kubelet's subpath.Subpath
// as makeMounts fills it in (pkg/kubelet/kubelet_pods.go).
func (e *Engine) volumeSubPath(c *containerRuntime, sp podcfg.SubPath) volume.SubPath {
	return volume.SubPath{
		VolumeMountIndex: sp.Index, VolumeName: sp.Volume, VolumePath: sp.VolumePath,
		SubPath: sp.SubPath, PodDir: e.rt.podDir, ContainerName: c.spec.Name,
	}
}

// plannedSubPath is the host path a subPath mount will get, computed
// without touching anything (the plan, the TUI's request preview): the bind
// target when podstep can mount, else <volume>/<subPath>.
func (e *Engine) plannedSubPath(c *containerRuntime) func(podcfg.SubPath) (string, error) {
	if !e.volumeHost().Mount {
		return nil
	}
	return func(sp podcfg.SubPath) (string, error) { return e.volumeSubPath(c, sp).Target(), nil }
}

// prepareSubPath makes each subPath mount safe as makeMounts does
// (subpath.SafeMakeDir, PrepareSafeSubpath; volume.Host.PrepareSubPath) and
// logs it.
func (e *Engine) prepareSubPath(c *containerRuntime, log *subPathLog) func(podcfg.SubPath) (string, error) {
	host := e.volumeHost()
	return func(sp podcfg.SubPath) (string, error) {
		vsp := e.volumeSubPath(c, sp)
		what := fmt.Sprintf("volumeMount %d (%s, subPath %q)", sp.Index, sp.Volume, sp.SubPath)
		r, err := host.PrepareSubPath(vsp)
		if err != nil {
			log.err = err
			cause := err.Error()
			var se *volume.SubPathError
			if errors.As(err, &se) {
				cause = se.Err.Error()
			}
			log.details = append(log.details,
				kv("subPath", what+" refused: "+cause),
				kv("why no path in the message", "the kubelet's message names no path on purpose (it could tell the pod about the host's filesystem); podstep shows the cause above"))
			return "", err
		}
		var v string
		switch {
		case r.Reused:
			v = fmt.Sprintf("%s: %s is already bind-mounted at %s (an earlier attempt's), sent as the host path", what, r.Source, r.HostPath)
		case r.Bound:
			v = fmt.Sprintf("%s: opened %s without following symlinks, bind-mounted it at %s, sent as the host path", what, r.Source, r.HostPath)
		default:
			v = fmt.Sprintf("%s: checked %s, sent as the host path (not bind-mounted)", what, r.Source)
		}
		if r.Bound {
			log.bound++
		} else {
			log.checked++
		}
		if r.Created {
			v += "; the subPath did not exist: made it as a directory with the volume's mode"
		}
		log.details = append(log.details, kv("subPath", v))
		if r.Warning != "" {
			log.warnings = append(log.warnings, r.Warning)
		}
		return r.HostPath, nil
	}
}
