package main

import (
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fatih/color"
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/cri"
)

// globalOptions are the flags every command that reaches a runtime shares.
type globalOptions struct {
	runtimeEndpoint string
	imageEndpoint   string
	sim             bool
	timeout         time.Duration
	pullTimeout     time.Duration
	rootDir         string
	logDir          string
	noColor         bool
	output          string
}

// Execute runs podstep with args and returns the process exit code.
func Execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "podstep",
		Short: "Replay how the kubelet creates a pod, one real CRI call at a time",
		Long: `podstep walks a pod manifest through the kubelet's own creation path
(admit → dirs → volumes → pull-secrets → sandbox → init → containers → post-start),
sending each real CRI call to a container runtime (containerd, CRI-O) and showing
what the kubelet decides, what the runtime answers and how the pod's state moves.

Without a reachable runtime it uses a built-in simulated CRI runtime, and says so.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if g.noColor || os.Getenv("NO_COLOR") != "" {
				color.NoColor = true
			}
			return g.absDirs()
		},
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })

	pf := root.PersistentFlags()
	pf.StringVarP(&g.runtimeEndpoint, "runtime-endpoint", "r", "", "CRI runtime endpoint (env CONTAINER_RUNTIME_ENDPOINT; default: the first well-known socket that answers, else the simulated runtime)")
	pf.StringVar(&g.imageEndpoint, "image-endpoint", "", "CRI image service endpoint (env IMAGE_SERVICE_ENDPOINT; default: the runtime endpoint)")
	pf.BoolVar(&g.sim, "sim", false, "use the built-in simulated CRI runtime")
	pf.DurationVar(&g.timeout, "timeout", cri.DefaultTimeout, "timeout of each CRI call (image pulls: --pull-timeout)")
	pf.DurationVar(&g.pullTimeout, "pull-timeout", cri.DefaultPullTimeout, "timeout of each PullImage call")
	pf.StringVar(&g.rootDir, "root-dir", defaultRootDir(), "kubelet-style root dir for pod data (pods/<uid>/...)")
	pf.StringVar(&g.logDir, "log-dir", defaultLogDir(), "root of the pod log dirs the runtime writes container logs into")
	pf.BoolVar(&g.noColor, "no-color", false, "disable colour (also NO_COLOR)")

	root.AddCommand(newRunCmd(g), newPlanCmd(g), newReplayCmd(), newDiffCmd(), newCleanupCmd(g), newInfoCmd(g), newVersionCmd(), newBenchCmd(g), newSimServeCmd(), newProxyCmd(g), newFleetCmd(g))
	root.CompletionOptions.HiddenDefaultCmd = false

	err := root.Execute()
	return exitCode(err, stderr)
}

// absDirs makes --root-dir and --log-dir absolute: the runtime mounts
// paths under them into containers (runc refuses relative mount sources),
// and `podstep cleanup`, run from another directory, finds them recorded
// on the sandbox.
func (g *globalOptions) absDirs() error {
	for _, d := range []struct {
		flag string
		dir  *string
	}{{"--root-dir", &g.rootDir}, {"--log-dir", &g.logDir}} {
		abs, err := filepath.Abs(*d.dir)
		if err != nil {
			return usageErr("%s %q: %v", d.flag, *d.dir, err)
		}
		*d.dir = abs
	}
	return nil
}

// defaultRootDir is /var/lib/podstep for root, else the user's state dir.
func defaultRootDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/podstep"
	}
	return filepath.Join(stateHome(), "podstep")
}

// defaultLogDir is /var/log/podstep/pods for root (beside, not inside, a
// kubelet's /var/log/pods), else under the user's state dir.
func defaultLogDir() string {
	if os.Geteuid() == 0 {
		return "/var/log/podstep/pods"
	}
	return filepath.Join(stateHome(), "podstep", "logs")
}

func stateHome() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return os.TempDir()
	}
	return filepath.Join(home, ".local", "state")
}
