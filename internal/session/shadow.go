package session

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/shadow"
)

// The --shadow modes: auto starts a shadow runtime when a kubelet watches
// the chosen one, always on any real runtime, never not at all.
const (
	ShadowAuto   = "auto"
	ShadowAlways = "always"
	ShadowNever  = "never"
)

// ShadowFlags are run's shadow settings, set by cmd (--shadow) and Run.
type ShadowFlags struct {
	// Mode is --shadow ("": never).
	Mode string
	// Images are the pod's images, copied into the shadow from the node's
	// runtime where it has them (Run fills them from the manifest).
	Images []string
	// CgroupRoot is the cgroup root the shadow's pods use (shadow.CgroupRoot).
	CgroupRoot string
	// Base is where the shadow's dir is made ("": shadow.DefaultBase).
	Base string
	// Host: the shadow is started in the host's mount namespace, that of
	// the runtime's process (shadow.StartInHost): a fleet runner's, a
	// container of its own whose mount namespace is not the host's. Base
	// is then a dir that is the same path in both.
	Host bool
	// Log gets the lines saying a shadow starts, is kept, or was not fully
	// removed (nil: none).
	Log io.Writer
}

// CheckShadow refuses a --shadow value that is not a mode, or always with
// --sim (the simulated runtime is podstep's own: no kubelet watches it).
func CheckShadow(mode string, sim bool) error {
	switch mode {
	case "", ShadowAuto, ShadowNever:
		return nil
	case ShadowAlways:
		if sim {
			return Usagef("--sim and --shadow=always conflict: the simulated runtime is podstep's own, there is no node runtime to shadow")
		}
		return nil
	}
	return Usagef("--shadow %q: expected auto, always or never", mode)
}

// PodImages are the images of the pod's containers (init, app, ephemeral).
func PodImages(b *manifest.Bundle) []string {
	var out []string
	for _, c := range b.Pod.Spec.InitContainers {
		out = append(out, c.Image)
	}
	for _, c := range b.Pod.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

// startShadow decides, for the real runtime at endpoint, whether the run
// goes to a shadow (Mode; auto: shadow.Watched), and starts it: the Conn on
// the shadow's endpoint, whose Stop removes the shadow (or keeps it, with
// KeepShadow). nil, nil: no shadow.
func (e Endpoints) startShadow(ctx context.Context, endpoint, why string, opts cri.Options) (*Conn, error) {
	mode := e.Shadow.Mode
	if mode == "" || mode == ShadowNever {
		return nil, nil
	}
	reason := "--shadow=always"
	if mode == ShadowAuto {
		probe, err := cri.Dial(endpoint, "", cri.Options{Timeout: 10 * time.Second})
		if err != nil {
			return nil, RuntimeErr(err)
		}
		w, err := shadow.Watched(ctx, probe)
		probe.Close()
		if err != nil {
			return nil, RuntimeErr(err)
		}
		if !w.Watched {
			return nil, nil
		}
		reason = "--shadow=auto: " + w.Why()
	}
	so := shadow.Options{Base: e.Shadow.Base, Images: e.Shadow.Images, CgroupRoot: e.Shadow.CgroupRoot}
	var (
		sh  *shadow.Shadow
		err error
	)
	if e.Shadow.Host {
		if e.Shadow.Log != nil {
			fmt.Fprintf(e.Shadow.Log, "podstep: starting a shadow of the runtime at %s in the host's mount namespace for the replay (%s)\n",
				safe.Line(endpoint), safe.Line(reason))
		}
		if sh, err = shadow.StartInHost(ctx, endpoint, so); err != nil {
			return nil, RuntimeErr(fmt.Errorf("--shadow=%s: start a shadow of the runtime at %s: %w", mode, endpoint, err))
		}
	} else {
		node, err := shadow.Find(ctx, endpoint)
		if err != nil {
			return nil, RuntimeErr(fmt.Errorf("--shadow=%s: %w", mode, err))
		}
		if e.Shadow.Log != nil {
			fmt.Fprintf(e.Shadow.Log, "podstep: starting a shadow of containerd %s (pid %d, %s) for the replay (%s)\n",
				safe.Line(node.Version), node.PID, safe.Line(node.Exe), safe.Line(reason))
		}
		if sh, err = shadow.Start(ctx, node, so); err != nil {
			return nil, RuntimeErr(fmt.Errorf("start a shadow of the runtime at %s: %w", endpoint, err))
		}
	}
	c, err := cri.Dial(sh.Endpoint, "", opts)
	if err != nil {
		_ = sh.Stop(ctx)
		return nil, RuntimeErr(err)
	}
	conn := &Conn{Client: c, Shadow: sh,
		Runtime: render.Runtime{Endpoint: sh.Endpoint, Why: why + "; " + reason + "; ran on " + sh.Describe()}}
	conn.Stop = func() {
		c.Close()
		if conn.KeepShadow {
			if e.Shadow.Log != nil {
				fmt.Fprintln(e.Shadow.Log, "podstep: "+sh.Keep())
			}
			return
		}
		err := sh.Stop(context.WithoutCancel(ctx))
		switch {
		case e.Shadow.Log == nil:
		case err != nil:
			fmt.Fprintf(e.Shadow.Log, "podstep: the shadow runtime was not fully removed (podstep cleanup removes the rest): %s\n", safe.Line(err.Error()))
		default:
			fmt.Fprintf(e.Shadow.Log, "podstep: the shadow of %s removed (process, shims, mounts, network, dir %s)\n", safe.Line(sh.Version), sh.Layout.Dir)
			if c := sh.CacheKept(); c != "" {
				fmt.Fprintf(e.Shadow.Log, "podstep: its images stay in the shadows' image cache %s for the next shadow (%s=0 keeps none; podstep cleanup removes it)\n", c, shadow.CacheEnv)
			}
		}
	}
	return conn, nil
}

// ShadowBase is where shadows live: PODSTEP_SHADOW_DIR, else
// shadow.DefaultBase (under root's podstep dir).
func ShadowBase() string {
	if d := os.Getenv("PODSTEP_SHADOW_DIR"); filepath.IsAbs(d) {
		return d
	}
	return shadow.DefaultBase
}
