package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/bench"
	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// benchOptions are the flags of `podstep bench`.
type benchOptions struct {
	run         runOptions
	n           int
	warmup      int
	concurrency int
	scale       string
	output      string
	compare     string
	threshold   float64
	minChange   time.Duration

	levels []int // from --concurrency or --scale
}

func newBenchCmd(g *globalOptions) *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench -f FILE",
		Short: "Create and tear down the pod N times and report per-phase and per-CRI-method percentiles, the kubelet's startup SLIs and podstep's own time",
		Example: `  podstep bench -f testdata/pods/hello.yaml --grace-period 0                 # 20 pods, one at a time
  podstep bench -f pod.yaml --concurrency 8 -o json > base.json              # 8 pods at once, as JSON
  podstep bench -f pod.yaml --scale 1,2,4,8,16                               # the scale curve
  podstep bench -f pod.yaml --compare base.json --threshold 10              # exit 1 on a significant regression`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, g, o)
		},
	}
	addPodFlags(cmd, &o.run)
	f := cmd.Flags()
	// The relist step watches for exits after the last start: it is not
	// pod creation, and it would add its second to every pod.
	o.run.settle = 0
	f.Lookup("settle").DefValue = "0s"
	f.IntVarP(&o.n, "count", "n", 20, "pods measured (per concurrency level)")
	f.IntVar(&o.warmup, "warmup", 2, "pods run first and not measured (per level): the runtime's caches and connections warm up")
	f.IntVar(&o.concurrency, "concurrency", 1, "pods in creation at once, as the kubelet's parallel pod workers")
	f.StringVar(&o.scale, "scale", "", "a scale curve: run the pods at each of these concurrencies, e.g. 1,2,4,8,16")
	f.StringVarP(&o.output, "output", "o", "text", "text or json (the JSON schema is in the README)")
	f.StringVar(&o.compare, "compare", "", "a baseline (the JSON of an earlier bench): print the change per phase with a Mann-Whitney U test; exit 1 on a regression")
	f.Float64Var(&o.threshold, "threshold", 10, "with --compare: a significant slow-down of a median by more than this percentage is a regression")
	f.DurationVar(&o.minChange, "min-change", time.Millisecond, "with --compare: a slow-down smaller than this is never a regression (sub-millisecond phases are noise)")
	f.Int64Var(&o.run.gracePeriod, "grace-period", -1, "seconds StopContainer waits before SIGKILL at teardown; -1 uses the pod's terminationGracePeriodSeconds")
	f.DurationVar(&o.run.pollInterval, "poll-interval", 100*time.Millisecond, "how often to relist containers while an init container runs")
	f.DurationVar(&o.run.initTimeout, "init-timeout", 5*time.Minute, "how long to wait for one init container to exit")
	f.DurationVar(&o.run.readyTimeout, "ready-timeout", 2*time.Minute, "how long the ready stage (--wait-ready) waits for the pod to be Ready")
	o.run.maxRestarts, o.run.backoffScale = 0, 1
	return cmd
}

// validate checks the flags before anything is read or sent.
func (o *benchOptions) validate(cmd *cobra.Command) error {
	o.run.output = report.Text
	if err := o.run.validate(); err != nil {
		return err
	}
	if o.n < 1 || o.n > bench.MaxPods {
		return usageErr("-n/--count %d: expected 1 to %d pods", o.n, bench.MaxPods)
	}
	if o.warmup < 0 || o.warmup > bench.MaxPods {
		return usageErr("--warmup %d: expected 0 to %d pods", o.warmup, bench.MaxPods)
	}
	if o.output != "text" && o.output != "json" {
		return usageErr("-o/--output %q: expected text or json", o.output)
	}
	if !(o.threshold >= 0 && o.threshold <= 1e6) { // NaN too
		return usageErr("--threshold %g: expected a percentage from 0 to 1e6", o.threshold)
	}
	if o.threshold < 0 {
		return usageErr("--threshold %g: expected a percentage ≥ 0", o.threshold)
	}
	if o.minChange < 0 {
		return usageErr("--min-change %s: expected a duration ≥ 0", o.minChange)
	}
	if cmd.Flags().Changed("threshold") && o.compare == "" {
		return usageErr("--threshold goes with --compare BASE.json")
	}
	if o.scale != "" && cmd.Flags().Changed("concurrency") {
		return usageErr("--concurrency and --scale: give one (--scale runs each concurrency in turn)")
	}
	if o.concurrency < 1 || o.concurrency > maxConcurrency {
		return usageErr("--concurrency %d: expected 1 to %d", o.concurrency, maxConcurrency)
	}
	o.levels = []int{o.concurrency}
	if o.scale != "" {
		o.levels = nil
		for _, f := range strings.Split(o.scale, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k < 1 || k > maxConcurrency {
				return usageErr("--scale %q: %q is not a concurrency from 1 to %d (expected e.g. 1,2,4,8,16)", o.scale, f, maxConcurrency)
			}
			o.levels = append(o.levels, k)
		}
	}
	return nil
}

// maxConcurrency bounds --concurrency: more pods at once than a node's
// default --max-pods (110) says nothing about a node.
const maxConcurrency = 110

// readBaseline reads a --compare baseline: a bench result as JSON.
func readBaseline(path string) (*bench.Result, error) {
	data, err := readLimited(path, bench.MaxBaseline, "a podstep bench result (JSON)")
	if err != nil {
		return nil, usageErr("--compare: %v", err)
	}
	var r bench.Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, usageErr("--compare %s: not a podstep bench result (JSON): %v", path, err)
	}
	if r.Schema != bench.Schema {
		return nil, usageErr("--compare %s: schema %q: expected %q (the JSON of podstep bench -o json)", path, r.Schema, bench.Schema)
	}
	if len(r.Levels) == 0 {
		return nil, usageErr("--compare %s: levels: empty: the baseline measured no pods", path)
	}
	return &r, nil
}

func runBench(cmd *cobra.Command, g *globalOptions, o *benchOptions) error {
	if err := o.validate(cmd); err != nil {
		return err
	}
	var base *bench.Result
	if o.compare != "" {
		var err error
		if base, err = readBaseline(o.compare); err != nil {
			return err
		}
	}
	bundle, err := loadManifest(cmd, o.run.file)
	if err != nil {
		return err
	}
	if o.run.node, err = o.run.nodeFor(bundle); err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()

	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	sig := watchSignals(cancel, stderr)
	defer sig.stop()
	c, err := connect(ctx, g)
	if err != nil {
		if sig.interrupted() {
			fmt.Fprintln(stderr, "podstep: interrupted before anything was created")
			return silentExit(ExitInterrupted)
		}
		return err
	}
	if c.info.Simulated {
		// The simulated runtime in a process of its own: its work is not
		// podstep's (see startSimProcess).
		c.stop()
		if c, err = startSimProcess(cri.Options{Timeout: g.timeout, PullTimeout: g.pullTimeout}, c.info.Why); err != nil {
			return err
		}
	}
	defer c.stop()

	b := &benchRun{ctx: ctx, o: o, g: g, c: c, bundle: bundle, stderr: stderr, live: map[*steps.Engine]bool{}}
	sig.watchMany(b.leftBehind)
	res := &bench.Result{Schema: bench.Schema, File: bundle.File, Pod: bundle.Pod.Namespace + "/" + bundle.Pod.Name,
		Runtime:   bench.Runtime{Endpoint: c.info.Endpoint, Simulated: c.info.Simulated, Why: c.info.Why},
		Simulated: c.info.Simulated, N: o.n, Warmup: o.warmup, Started: time.Now().UTC()}
	if c.info.Simulated {
		fmt.Fprintln(stderr, "podstep: "+bench.SimulatedNote)
	}
	for _, k := range o.levels {
		if ctx.Err() != nil || b.stopped() {
			break
		}
		if o.warmup > 0 {
			bench.RunPods(ctx, o.warmup, k, b.take(o.warmup), b.pod)
		}
		if ctx.Err() != nil || b.stopped() {
			break
		}
		cpu0, start := cpuTime(), time.Now()
		pods := bench.RunPods(ctx, o.n, k, b.take(o.n), b.pod)
		wall, cpu := time.Since(start), cpuTime()-cpu0
		if l := bench.Build(k, pods, wall, cpu); l.Pods > 0 {
			res.Levels = append(res.Levels, l)
		}
	}
	res.Runtime.Name, res.Runtime.Version = b.version()

	var cmp *bench.Comparison
	if base != nil && len(res.Levels) > 0 {
		cmp = bench.Compare(base, res, o.threshold, float64(o.minChange.Microseconds())/1000)
	}
	if err := writeBench(stdout, o.output, res, cmp); err != nil {
		return err
	}
	code := b.exitCode(sig.interrupted())
	if code == ExitInterrupted {
		fmt.Fprintf(stderr, "podstep: interrupted: torn down (%d pods measured)\n", measured(res))
	}
	if code == ExitOK && cmp != nil && cmp.Regressions() > 0 {
		fmt.Fprintf(stderr, "podstep: %d regression(s) against %s\n", cmp.Regressions(), o.compare)
		code = ExitPodFailed
	}
	return silentExit(code)
}

// benchOutput is -o json's one object: the result, and the comparison
// when --compare was given.
type benchOutput struct {
	*bench.Result
	Comparison *benchComparison `json:"comparison,omitempty"`
}

type benchComparison struct {
	Baseline     string      `json:"baseline_started"`
	ThresholdPct float64     `json:"threshold_pct"`
	MinChangeMs  float64     `json:"min_change_ms"`
	Regressions  int         `json:"regressions"`
	Rows         []bench.Row `json:"rows"`
	Unmatched    []string    `json:"unmatched,omitempty"`
}

func writeBench(w io.Writer, output string, res *bench.Result, cmp *bench.Comparison) error {
	if output == "json" {
		out := benchOutput{Result: res}
		if cmp != nil {
			out.Comparison = &benchComparison{Baseline: cmp.Base.Started.Format(time.RFC3339), ThresholdPct: cmp.ThresholdPct,
				MinChangeMs: cmp.MinChangeMs, Regressions: cmp.Regressions(), Rows: cmp.Rows, Unmatched: cmp.Unmatched}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("write the result: %w", err)
		}
		return nil
	}
	bench.WriteText(w, res)
	if cmp != nil {
		bench.WriteComparison(w, cmp)
	}
	return nil
}

// benchRun is one bench's pods: it runs each through its own engine on
// its own session of the one runtime client.
type benchRun struct {
	ctx    context.Context // cancelled by an interrupt
	o      *benchOptions
	g      *globalOptions
	c      *conn
	bundle *manifest.Bundle
	stderr io.Writer

	mu       sync.Mutex
	next     int                    // the next pod's index
	live     map[*steps.Engine]bool // engines not yet torn down
	codes    []int                  // each pod's exit code
	stop     bool                   // a pod failed: start no more
	rtName   string
	rtVer    string
	reported bool
}

// take reserves n pod indexes and returns the first.
func (b *benchRun) take(n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := b.next + 1
	b.next += n
	return first
}

func (b *benchRun) stopped() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stop
}

// podBundle is the manifest for pod i: its own name (<name>-<i>) and UID
// (the hex md5 of the manifest's UID and i), so that pods created at
// once do not collide in the runtime or in the pod and log dirs.
func podBundle(b *manifest.Bundle, i int) *manifest.Bundle {
	nb := *b
	nb.Pod = b.Pod.DeepCopy()
	nb.Pod.Name = fmt.Sprintf("%s-%d", b.Pod.Name, i)
	sum := md5.Sum([]byte(string(b.Pod.UID) + "/" + strconv.Itoa(i)))
	nb.Pod.UID = types.UID(hex.EncodeToString(sum[:]))
	return &nb
}

// pod runs pod i: creation, then teardown, as `run --auto` does.
func (b *benchRun) pod(i int) (bench.Pod, bool) {
	ctx := b.ctx
	pb := podBundle(b.bundle, i)
	eo := b.o.run.engineOptions(b.g)
	eo.Simulated = b.c.info.Simulated
	client := b.c.client.Session()
	eng, err := steps.New(pb, client, eo)
	if err != nil {
		b.finish(nil, ExitPodFailed)
		return bench.Pod{Name: pb.Pod.Name, Failed: err.Error()}, true
	}
	b.mu.Lock()
	b.live[eng] = true
	b.mu.Unlock()
	start := time.Now()
	for !eng.Finished() && ctx.Err() == nil {
		if err := eng.Continue(ctx); err != nil && !errors.Is(err, context.Canceled) {
			break
		}
	}
	created := time.Since(start)
	interrupted := ctx.Err() != nil
	sum := report.Summary{Status: eng.PodState().Status}
	tstart := time.Now()
	code, msg := settle(context.WithoutCancel(ctx), eng, &sum, true, interrupted, b.stderr)
	torn := time.Since(tstart)
	if msg != "" && code != ExitInterrupted {
		fmt.Fprintf(b.stderr, "%s: %s\n", pb.Pod.Name, msg)
	}
	all := eng.Steps()
	b.noteVersion(all)
	b.finish(eng, code)
	p := bench.Measure(pb.Pod, all, created, torn)
	p.Interrupted = interrupted
	if p.Failed == "" && code != ExitOK && code != ExitInterrupted {
		p.Failed = fmt.Sprintf("exit code %d", code)
	}
	return p, code != ExitOK
}

func (b *benchRun) finish(eng *steps.Engine, code int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.live, eng)
	b.codes = append(b.codes, code)
	if code != ExitOK {
		b.stop = true
	}
}

// leftBehind is what the engines not yet torn down left (a second Ctrl-C).
func (b *benchRun) leftBehind() []steps.LeftBehind {
	b.mu.Lock()
	engs := make([]*steps.Engine, 0, len(b.live))
	for e := range b.live {
		engs = append(engs, e)
	}
	b.mu.Unlock()
	var out []steps.LeftBehind
	for _, e := range engs {
		out = append(out, e.LeftBehind())
	}
	return out
}

// noteVersion keeps the runtime's name and version from the first
// Version call answered.
func (b *benchRun) noteVersion(all []steps.Step) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reported {
		return
	}
	for _, s := range all {
		for _, c := range s.Calls {
			if v, ok := c.Response.(*runtimeapi.VersionResponse); ok && c.Method == "Version" {
				b.rtName, b.rtVer, b.reported = v.RuntimeName, v.RuntimeVersion, true
				return
			}
		}
	}
}

func (b *benchRun) version() (string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rtName, b.rtVer
}

// exitCode is the bench's: what needs the user first, as for run: the
// runtime went away (3), something is left (4), an interrupt (130), a pod
// failed (1).
func (b *benchRun) exitCode(interrupted bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	has := map[int]bool{}
	for _, c := range b.codes {
		has[c] = true
	}
	for _, c := range []int{ExitRuntime, ExitLeftBehind, ExitInterrupted} {
		if has[c] {
			return c
		}
	}
	if interrupted {
		return ExitInterrupted
	}
	if has[ExitPodFailed] {
		return ExitPodFailed
	}
	return ExitOK
}

// measured counts the pods of every level.
func measured(r *bench.Result) int {
	n := 0
	for _, l := range r.Levels {
		n += l.Pods
	}
	return n
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
