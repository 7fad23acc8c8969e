package session

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/podstep/podstep/internal/bundle"
	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/safe"
)

// BundleOptions are `podstep bundle`'s flags.
type BundleOptions struct {
	// Out is the tar.gz to write ("-": stdout).
	Out string
	// Recording is a recording of the pod's calls ("" for none).
	Recording string
	// CNIConfDir overrides the runtime's CNI conf dir.
	CNIConfDir string
	// NoRuntime leaves the runtime out (a bundle from a recording alone).
	NoRuntime bool
	// Pod, Kubeconfig, Context: the pod's cluster part (Pod "": none).
	Pod, Kubeconfig, Context string
	AllowExecPlugins         bool
	// Version is podstep's version.
	Version string
}

// Bundle gathers a bug report's bundle (internal/bundle) and writes it to
// o.Out. A runtime that does not answer, or a cluster read that fails, is
// named in the bundle's README and on stderr; the bundle is still written.
func Bundle(ctx context.Context, ep Endpoints, o BundleOptions, stdout, stderr io.Writer) error {
	if o.Out == "" {
		return Usagef("bundle: --out FILE.tar.gz (or -) is required")
	}
	if o.Out != "-" {
		if err := outfile.Check(o.Out, false); err != nil {
			return Usagef("bundle: --out %s: %v", o.Out, err)
		}
	}
	bo := bundle.Options{Recording: o.Recording, CNIConfDir: o.CNIConfDir, Version: o.Version}
	if o.Pod != "" {
		ns, name, ok := strings.Cut(o.Pod, "/")
		if !ok {
			ns, name = "", o.Pod
		}
		if name == "" || strings.Contains(name, "/") {
			return Usagef("bundle: --pod %q: expected [NAMESPACE/]NAME", o.Pod)
		}
		c, err := cluster.Connect(cluster.Options{Kubeconfig: o.Kubeconfig, Context: o.Context, AllowExecPlugins: o.AllowExecPlugins, Stderr: stderr})
		if err != nil {
			return Usagef("%v", err)
		}
		if ns == "" {
			ns = c.Namespace
		}
		bo.API, bo.Namespace, bo.Pod = c.API, ns, name
	}
	if !o.NoRuntime {
		ep.NoFallback = true
		c, err := Connect(ctx, ep)
		if err != nil {
			fmt.Fprintf(stderr, "warning: no runtime in the bundle: %s\n", safe.Line(err.Error()))
		} else {
			defer c.Stop()
			bo.Runtime, bo.Endpoint = c.Client, c.Runtime.Endpoint
		}
	}
	var res *bundle.Result
	err := outfile.Write(o.Out, outfile.Options{Stdout: stdout}, func(w io.Writer) error {
		var err error
		res, err = bundle.Write(ctx, w, bo)
		return err
	})
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	if o.Out != "-" {
		fmt.Fprintf(stderr, "wrote %s: %d files, %d values masked\n", safe.Line(o.Out), len(res.Files), res.Masked)
	}
	for _, m := range res.Missing {
		fmt.Fprintf(stderr, "  not gathered: %s\n", safe.Line(m))
	}
	return nil
}
