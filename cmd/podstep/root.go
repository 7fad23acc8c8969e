package main

import (
	"io"
	"os"
	"strings"

	"github.com/fatih/color"
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/gctune"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/session"
)

// globalOptions are the flags every command that reaches a runtime shares.
type globalOptions struct {
	ep      session.Endpoints // -r, --image-endpoint, --sim, --timeout, --pull-timeout
	rootDir string
	logDir  string
	// rootSet, logSet: --root-dir, --log-dir were given.
	rootSet, logSet bool
	noColor         bool
}

// Execute runs podstep with args and returns the process exit code.
// Everything it prints goes through safe.Writer: untrusted text (manifests,
// runtimes, recordings) shows no raw control character; the TUI writes to
// the terminal underneath (safe.Raw) and sanitises its frames itself.
func Execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sout, serr := safe.NewWriter(stdout), safe.NewWriter(stderr)
	defer sout.Flush()
	defer serr.Flush()
	stdout, stderr = sout, serr
	root := newRootCmd()
	pre := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if err := pre(cmd, args); err != nil {
			return err
		}
		gctune.Command(cmd.Name())
		// Only the printers of run, replay and proxy colour, and they
		// sanitise what they colour: elsewhere an SGR is escaped too.
		switch cmd.Name() {
		case "run", "replay", "proxy":
			sout.AllowSGR(!color.NoColor && isTerminal(sout))
		}
		return nil
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	return session.Print(err, stderr)
}

// newRootCmd builds the podstep command tree. Besides Execute, the CLI
// reference in docs/cli is generated from it (clidocs_test.go).
func newRootCmd() *cobra.Command {
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
			if err := session.CheckFlagBounds(cmd.Flags()); err != nil {
				return err
			}
			if err := g.ep.Check(); err != nil {
				return err
			}
			g.rootSet, g.logSet = cmd.Flags().Changed("root-dir"), cmd.Flags().Changed("log-dir")
			return session.AbsDirs(&g.rootDir, &g.logDir)
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return session.FlagError(err, c.Flags()) })

	pf := root.PersistentFlags()
	pf.StringVarP(&g.ep.Runtime, "runtime-endpoint", "r", "", "CRI runtime endpoint (env CONTAINER_RUNTIME_ENDPOINT; default: the first well-known socket that answers, else the simulated runtime)")
	pf.StringVar(&g.ep.Image, "image-endpoint", "", "CRI image service endpoint (env IMAGE_SERVICE_ENDPOINT; default: the runtime endpoint)")
	pf.BoolVar(&g.ep.Sim, "sim", false, "use the built-in simulated CRI runtime")
	pf.DurationVar(&g.ep.Timeout, "timeout", cri.DefaultTimeout, "timeout of each CRI call (RunPodSandbox: twice it, as the kubelet; image pulls: --pull-timeout)")
	pf.DurationVar(&g.ep.PullTimeout, "pull-timeout", cri.DefaultPullTimeout, "timeout of each PullImage call")
	pf.StringVar(&g.rootDir, "root-dir", session.DefaultRootDir(), "kubelet-style root dir for pod data (pods/<uid>/...)")
	pf.StringVar(&g.logDir, "log-dir", session.DefaultLogDir(), "root of the pod log dirs the runtime writes container logs into")
	pf.BoolVar(&g.noColor, "no-color", false, "disable colour (also NO_COLOR)")
	pf.Bool("force", false, "write an output file (--record, --html, --crictl) even where its path is a symbolic link, FIFO or device")

	root.AddCommand(scenarioFlag(newRunCmd(g)), scenarioFlag(newPlanCmd(g)), newScenariosCmd(), newReplayCmd(), newDiffCmd(), newCleanupCmd(g), newInfoCmd(g), newVersionCmd(), scenarioFlag(newBenchCmd(g)), newSimServeCmd(), newProxyCmd(g), newFleetCmd(g), newExplainCmd(), newBundleCmd(g), newShadowHelperCmd())
	completeOutputs(root)
	for _, c := range root.Commands() {
		if c.Flags().Lookup("break") != nil { // the shell completes --break's stages
			_ = c.RegisterFlagCompletionFunc("break", func(_ *cobra.Command, _ []string, s string) ([]string, cobra.ShellCompDirective) {
				return session.BreakCompletion(s), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
			})
		}
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// dirsInto hands --root-dir and --log-dir to a run's options.
func (g *globalOptions) dirsInto(o *session.Options) {
	o.RootDir, o.LogDir, o.RootDirGiven, o.LogDirGiven = g.rootDir, g.logDir, g.rootSet, g.logSet
}

// forceFlag is --force: an output may replace what is not a regular file.
func forceFlag(cmd *cobra.Command) bool {
	f, _ := cmd.Flags().GetBool("force")
	return f
}

// outputValues are the -o values of each command (by its path after
// "podstep "), for the shell's completion: each command checks its own.
var outputValues = map[string][]string{
	"run":            {"text", "short", "json"},
	"replay":         {"text", "short", "json"},
	"proxy":          {"text", "short", "json"},
	"plan":           {"yaml", "json"},
	"diff":           {"text", "json"},
	"bench":          {"text", "json"},
	"fleet":          {"text", "json"},
	"scenarios":      {"text", "json"},
	"scenarios show": {"text", "json", "yaml"},
	"explain":        {"text", "json"},
}

// completeOutputs has the shell complete -o/--output on every command that
// has it with the command's values (outputValues).
func completeOutputs(c *cobra.Command) {
	if f := c.LocalFlags().Lookup("output"); f != nil {
		_ = c.RegisterFlagCompletionFunc("output", func(cmd *cobra.Command, _ []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			for _, v := range outputValues[strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")] {
				if strings.HasPrefix(v, s) {
					out = append(out, v)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, sub := range c.Commands() {
		completeOutputs(sub)
	}
}
