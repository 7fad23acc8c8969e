package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/gctune"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/predict"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/shadow"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/trace"
)

// RunFlags are the flags of `podstep run` but the live page's: the run's
// settings (Options, shared with plan and bench) and how it is shown.
type RunFlags struct {
	Options
	Auto    bool
	Keep    bool
	Output  string // --output: report.Text, Short or JSON
	Quiet   bool
	Record  string
	Predict bool          // --predict: ask before each step (internal/predict)
	Trace   trace.Options // --otlp-endpoint, --otlp-protocol

	// JSONFullPod is --json-full-pod: -o json's step lines have the whole
	// pod each ("pod"), not what the step changed ("pod_delta").
	JSONFullPod bool

	// Shadow is --shadow: auto, always or never (ShadowAuto, ...).
	Shadow string

	// Tracing is the run's export, set by Run (nil: no tracing); the
	// command closes it with the run's exit error.
	Tracing *Tracing
}

// RunEnv is what `podstep run` runs in: the endpoint flags, podstep's
// version, the standard streams and whether they are terminals, and the
// frontends cmd hands in (session imports neither the live page nor the TUI).
type RunEnv struct {
	Endpoints Endpoints
	Version   string
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	// Terminal: stdout is a terminal; StdinTerminal: stdin is (it echoes a
	// typed answer).
	Terminal, StdinTerminal bool
	Force                   bool           // --force
	Flags                   *pflag.FlagSet // named in a recording's header
	// Page starts --serve's live page (nil without --serve).
	Page func(stderr io.Writer) (Teed, error)
	// NoColor turns colour off (stdout is not a terminal).
	NoColor func()
	// TUI runs the pod interactively until the user quits or ctx ends.
	TUI func(ctx context.Context, eng *steps.Engine, rt render.Runtime) (TUIResult, error)
}

// QuitInterrupts says whether a TUI run ended by the user counts as
// interrupted (exit 130): ctrl+c or a signal always; q in predict mode
// before the run's end too, as the quiz was cut short (a crash loop quit
// midway exited 0, as if the lesson had run to its end).
func QuitInterrupts(predict, finished, interrupted bool) bool {
	return interrupted || (predict && !finished)
}

// TUIResult is how the TUI ended (internal/tui's Result).
type TUIResult struct {
	Teardown    bool // the pod must be torn down
	Interrupted bool // ctrl+c, a signal or a cancelled context
	// Score is predict mode's (run --predict on a terminal): the last
	// line on stdout.
	Score predict.Score
}

// Validate checks the flags before anything is read or sent; cmd has set
// the embedded Options' dirs, Changed and Stderr.
func (o *RunFlags) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if err := CheckOutput(o.Output, report.Text, report.Short, report.JSON); err != nil {
		return err
	}
	if o.Predict {
		if o.Output == report.JSON || o.File == "-" {
			return Usagef("--predict reads answers from stdin and asks on stdout: it goes with -o text or short and a manifest that is not stdin")
		}
	}
	if o.JSONFullPod && o.Output != report.JSON {
		return Usagef("--json-full-pod is a shape of -o json's step lines: it goes with -o json")
	}
	if o.FleetHostDir != "" && !filepath.IsAbs(o.FleetHostDir) {
		return Usagef("--fleet-host-dir %q: expected an absolute path", o.FleetHostDir)
	}
	if err := CheckShadow(o.Shadow, false); err != nil {
		return err
	}
	if o.Quiet {
		if o.Output == report.JSON {
			return Usagef("--quiet is -o short, the short text form: it does not go with -o json")
		}
		o.Output = report.Short
	}
	return nil
}

// Run is `podstep run`: the flags' checks, the manifest, the recording and
// trace, the runtime, then the pod in the TUI or --auto; the exit error as
// every command's (session's codes).
func (o *RunFlags) Run(ctx context.Context, env RunEnv) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := CheckShadow(o.Shadow, env.Endpoints.Sim); err != nil {
		return err
	}
	// A fleet runner's dirs go with it, however the run ends (but a second
	// signal, which abandons teardown: its pod dirs stay, so do they).
	defer o.RemoveHostDirs(env.Stderr)
	if o.Predict && !env.Terminal {
		// On a terminal the TUI asks (its predict mode); elsewhere --auto does.
		o.Auto = true
	}
	bundle, rec, closeRec, err := o.open(ctx, env)
	if err != nil {
		return err
	}
	gctune.Pod(len(bundle.Pod.Spec.InitContainers) + len(bundle.Pod.Spec.Containers))
	defer closeRec()
	interactive := !o.Auto && env.Terminal
	if !o.Auto && !interactive {
		fmt.Fprintln(env.Stderr, "podstep: stdout is not a terminal: running as --auto")
	}
	if !env.Terminal && env.NoColor != nil {
		env.NoColor()
	}

	// Signals: the first SIGINT/SIGTERM/SIGHUP (a closed terminal) cancels the
	// run and tears down; a second one abandons teardown (Interrupts).
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := WatchSignals(cancel, env.Stderr)
	defer sig.Stop()

	ep := env.Endpoints
	ep.SimDirs = o.SimDirs()
	ep.Shadow = o.shadowFlags(bundle, env.Stderr)
	c, err := Connect(ctx, ep)
	if err != nil {
		rec.Discard()
		return sig.NotStarted(err)
	}
	defer c.Stop()
	if c.Shadow != nil {
		// The shadow's pods go under a cgroup of podstep's own; --keep keeps
		// the shadow with the pod (unless interrupted: then both go).
		if ep.Shadow.CgroupRoot != "" {
			o.CgroupRoot = ep.Shadow.CgroupRoot
		}
		defer func() { c.KeepShadow = o.Keep && !sig.Interrupted() }()
	}
	if err := o.UseRuntime(c); err != nil {
		rec.Discard()
		return err
	}
	eng := steps.New(bundle, c.Client, o.Engine(c.Runtime))
	sig.Watch(eng)
	o.Tracing.Start(ctx, c, eng)
	begin := Begin{Podstep: env.Version, Interactive: interactive, Output: o.Output, Flags: env.Flags, Node: o.Node, Stderr: env.Stderr}
	if interactive {
		rec.Start(ctx, c, bundle, eng, begin)
		return o.interactive(ctx, env, eng, c, sig, rec)
	}
	// A reader of stdout that goes away (`| head`) interrupts the run.
	printer := report.New(sig.Stdout(env.Stdout), o.Output)
	printer.SetFullPod(o.JSONFullPod)
	if o.Output == report.JSON {
		eng.Subscribe(printer.Observe) // each step's object has the pod's status
	} else {
		eng.SubscribeWithoutPod(printer.Observe) // the text shows what changed
	}
	var quiz *predict.Quiz
	if o.Predict {
		quiz = predict.New(predict.Options{In: env.Stdin, Out: sig.Stdout(env.Stdout), Echo: !env.StdinTerminal, Scenario: ScenarioOf(o.Scenario)})
	}
	printer.Start(c.Runtime, PodName(eng))
	rec.Start(ctx, c, bundle, eng, begin)
	return o.auto(ctx, parent, eng, c, sig, quiz, printer, rec, env.Stderr)
}

// open reads the manifest, starts the trace export and opens the
// recording, teed into the live page; closeRec closes the page then the
// recording.
func (o *RunFlags) open(ctx context.Context, env RunEnv) (bundle *manifest.Bundle, rec *Recording, closeRec func(), err error) {
	if bundle, err = o.LoadManifest(env.Stdin); err != nil {
		return nil, nil, nil, err
	}
	if o.Tracing, err = OpenTracing(ctx, o.Trace, env.Version); err != nil {
		return nil, nil, nil, err
	}
	if rec, err = OpenRecording(o.Record, o.File, env.Force); err != nil {
		return nil, nil, nil, err
	}
	if env.Page == nil {
		return bundle, rec, rec.Close, nil
	}
	page, err := env.Page(env.Stderr)
	if err != nil {
		rec.Close()
		return nil, nil, nil, err
	}
	return bundle, rec.Tee(page), func() { page.Close(); rec.Close() }, nil
}

// ScenarioOf is the scenario named name, nil for "" (or a name that is not
// one: --scenario checked it already).
func ScenarioOf(name string) *scenario.Scenario {
	if s, err := scenario.Get(name); err == nil {
		return &s
	}
	return nil
}

// auto runs every step, then settles the run (Settle).
func (o *RunFlags) auto(ctx, parent context.Context, eng *steps.Engine, c *Conn, sig *Interrupts, quiz *predict.Quiz,
	printer *report.Printer, rec *Recording, stderr io.Writer) error {
	start := time.Now()
	if quiz != nil {
		if err := predict.Run(ctx, eng, quiz, func() string { return eng.PodState().Display }); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for !eng.Finished() && ctx.Err() == nil {
		if err := eng.Continue(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	// A reader of stdout that went away (`| head`) stops the run, quietly:
	// torn down, exit 0, as for a reader that read what it wanted.
	wasInterrupted := sig.Interrupted() && !sig.StdoutGone()
	sum := Summarize(eng, c.Client.Calls(), time.Since(start), o.Keep && !sig.Interrupted())
	code, msg := o.End(parent, eng, &sum, !sum.Kept, wasInterrupted, printer, rec, stderr)
	if code == ExitPodFailed && o.Output == report.JSON {
		fmt.Fprintf(stderr, "error: stage %s, step %s: %s: %s\n", sum.Failed.Stage, sum.Failed.Step, sum.Failed.Reason, sum.Failed.Message)
	}
	if msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	return Silent(code)
}

// interactive runs the pod in the TUI, one keypress per step. When the
// TUI ends it tears the pod down (unless the user kept it), printing each
// teardown step as a plain line, then a one-line summary; exit codes are
// those of --auto. ctx is cancelled by a signal (SIGHUP included: a closed
// terminal), which ends the TUI and tears the pod down.
func (o *RunFlags) interactive(ctx context.Context, env RunEnv, eng *steps.Engine, c *Conn, sig *Interrupts, rec *Recording) error {
	res, tuiErr := env.TUI(ctx, eng, c.Runtime)

	// The TUI is gone: from here on, plain lines.
	printer := report.New(env.Stdout, report.Text)
	printer.SetPod(PodName(eng))
	eng.SubscribeWithoutPod(printer.Observe)
	var created time.Duration
	for _, s := range eng.StepsAsRun() {
		if s.Stage != steps.StageTeardown { // the TUI may have stepped the teardown
			created += s.Duration
		}
	}
	teardown := res.Teardown || tuiErr != nil
	sum := Summarize(eng, c.Client.Calls(), created, !teardown)
	if tuiErr != nil {
		fmt.Fprintln(env.Stderr, "podstep: terminal:", tuiErr)
	}
	if _, left := eng.NextStep(); teardown && (left || !tornDown(eng)) {
		fmt.Fprintf(env.Stdout, "podstep: tearing down pod %s\n", sum.Pod)
	}
	if res.Interrupted {
		// ctrl+c in the TUI was the first interrupt: the next one abandons teardown.
		sig.Interrupt()
	}
	code, msg := o.End(ctx, eng, &sum, teardown, QuitInterrupts(o.Predict, eng.Finished(), res.Interrupted), printer, rec, env.Stderr)
	if score := res.Score.String(); score != "" {
		fmt.Fprintln(env.Stdout, score)
	}
	if msg != "" {
		fmt.Fprintln(env.Stderr, msg)
	}
	if tuiErr != nil && code == ExitOK {
		code = ExitRuntime
	}
	return Silent(code)
}

// tornDown says whether the TUI planned and stepped the whole teardown.
func tornDown(eng *steps.Engine) bool {
	all := eng.StepsAsRun()
	return len(all) > 0 && all[len(all)-1].Stage == steps.StageTeardown
}

// shadowFlags are the run's shadow settings: --shadow, the pod's images,
// its cgroup root below the node's (shadow.CgroupRoot).
// A fleet runner (--fleet-host-dir) starts it in the host's mount
// namespace (its own is the runner container's), under HOST_DIR/shadows,
// the same path in both.
func (o *RunFlags) shadowFlags(b *manifest.Bundle, stderr io.Writer) ShadowFlags {
	f := ShadowFlags{Base: ShadowBase(), Mode: o.Shadow, Images: PodImages(b), Log: stderr}
	if o.FleetHostDir != "" {
		f.Host, f.Base = true, filepath.Join(o.FleetHostDir, "shadows")
	}
	if o.CgroupsPerQOS {
		// Without cgroupsPerQOS the pods have no cgroup parent (podcfg.CgroupParent).
		f.CgroupRoot = shadow.CgroupRoot(o.CgroupRoot)
	}
	return f
}
