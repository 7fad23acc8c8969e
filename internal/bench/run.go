package bench

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

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/limit"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
)

// Config is one bench: the manifest, the engine's options for each pod,
// the connected runtime, and how many pods at which concurrencies.
type Config struct {
	Bundle *manifest.Bundle
	Engine steps.Options // Simulated is set from Conn
	Conn   *session.Conn
	N      int   // pods measured per level
	Warmup int   // pods run first and not measured, per level
	Levels []int // concurrencies, in turn
	Stderr io.Writer
}

// Runner is one bench's pods: it runs each through its own engine on its
// own session of the one runtime client (Run), and knows what the pods not
// yet torn down left (LeftBehind) and the bench's exit code (ExitCode).
type Runner struct {
	ctx context.Context // cancelled by an interrupt
	cfg Config

	mu       sync.Mutex
	next     int                    // the next pod's index
	live     map[*steps.Engine]bool // engines not yet torn down
	codes    []int                  // each pod's exit code
	stop     bool                   // a pod failed: start no more
	rtName   string
	rtVer    string
	reported bool
	restsOn  []string        // Result.RestsOn so far
	seen     map[string]bool // its lines
}

// NewRunner makes the bench's runner; ctx's end (an interrupt) stops it.
func NewRunner(ctx context.Context, cfg Config) *Runner {
	cfg.Engine.Simulated = cfg.Conn.Runtime.Simulated
	cfg.Engine.KeepPods = true // Measure's startup SLI reads each step's pod
	return &Runner{ctx: ctx, cfg: cfg, live: map[*steps.Engine]bool{}}
}

// Run measures the pods at each level in turn, until the levels are done,
// ctx ends or a pod fails.
func (b *Runner) Run() *Result {
	c, cfg := b.cfg.Conn, b.cfg
	res := &Result{Schema: Schema, File: cfg.Bundle.File, Pod: cfg.Bundle.Pod.Namespace + "/" + cfg.Bundle.Pod.Name,
		Runtime:   Runtime{Endpoint: c.Runtime.Endpoint, Simulated: c.Runtime.Simulated, Why: c.Runtime.Why},
		Simulated: c.Runtime.Simulated, N: cfg.N, Warmup: cfg.Warmup, Started: time.Now().UTC()}
	for _, k := range cfg.Levels {
		if b.ctx.Err() != nil || b.stopped() {
			break
		}
		if cfg.Warmup > 0 {
			RunPods(b.ctx, cfg.Warmup, k, b.take(cfg.Warmup), b.pod)
		}
		if b.ctx.Err() != nil || b.stopped() {
			break
		}
		cpu0, start := cpuTime(), time.Now()
		pods := RunPods(b.ctx, cfg.N, k, b.take(cfg.N), b.pod)
		wall, cpu := time.Since(start), cpuTime()-cpu0
		if l := Build(k, pods, wall, cpu); l.Pods > 0 {
			res.Levels = append(res.Levels, l)
		}
	}
	res.Runtime.Name, res.Runtime.Version = b.version()
	b.mu.Lock()
	res.RestsOn = b.restsOn
	b.mu.Unlock()
	return res
}

// take reserves n pod indexes and returns the first.
func (b *Runner) take(n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := b.next + 1
	b.next += n
	return first
}

func (b *Runner) stopped() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stop
}

// PodBundle is the manifest for pod i: its own name (<name>-<i>) and UID
// (the hex md5 of the manifest's UID and i), so that pods created at
// once do not collide in the runtime or in the pod and log dirs.
func PodBundle(b *manifest.Bundle, i int) *manifest.Bundle {
	nb := *b
	nb.Pod = b.Pod.DeepCopy()
	nb.Pod.Name = fmt.Sprintf("%s-%d", b.Pod.Name, i)
	sum := md5.Sum([]byte(string(b.Pod.UID) + "/" + strconv.Itoa(i)))
	nb.Pod.UID = types.UID(hex.EncodeToString(sum[:]))
	return &nb
}

// pod runs pod i: creation, then teardown, as `run --auto` does. An error
// of the engine's other than the interrupt's fails the pod, said on stderr.
func (b *Runner) pod(i int) (Pod, bool) {
	ctx := b.ctx
	pb := PodBundle(b.cfg.Bundle, i)
	eng := steps.New(pb, b.cfg.Conn.Client.Session(), b.cfg.Engine)
	b.mu.Lock()
	b.live[eng] = true
	b.mu.Unlock()
	start := time.Now()
	var runErr error
	for !eng.Finished() && ctx.Err() == nil {
		if err := eng.Continue(ctx); err != nil && !errors.Is(err, context.Canceled) {
			runErr = err
			break
		}
	}
	created := time.Since(start)
	interrupted := ctx.Err() != nil
	sum := report.Summary{Status: eng.PodState().Status}
	tstart := time.Now()
	code, msg := session.Settle(context.WithoutCancel(ctx), eng, &sum, true, interrupted, b.cfg.Stderr)
	torn := time.Since(tstart)
	if runErr != nil {
		fmt.Fprintf(b.cfg.Stderr, "%s: %v\n", pb.Pod.Name, runErr)
		if code == session.ExitOK || code == session.ExitInterrupted {
			code = session.ExitPodFailed
		}
	}
	if msg != "" && code != session.ExitInterrupted {
		fmt.Fprintf(b.cfg.Stderr, "%s: %s\n", pb.Pod.Name, msg)
	}
	all := eng.Steps()
	b.noteVersion(all)
	b.noteRestsOn(all, sum.Status.PodIP)
	b.finish(eng, code)
	p := Measure(pb.Pod, all, created, torn)
	p.Interrupted = interrupted
	if p.Failed == "" && runErr != nil {
		p.Failed = runErr.Error()
	}
	if p.Failed == "" && code != session.ExitOK && code != session.ExitInterrupted {
		p.Failed = fmt.Sprintf("exit code %d", code)
	}
	return p, code != session.ExitOK
}

func (b *Runner) finish(eng *steps.Engine, code int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.live, eng)
	b.codes = append(b.codes, code)
	if code != session.ExitOK {
		b.stop = true
	}
}

// LeftBehind is what the engines not yet torn down left (a second Ctrl-C).
func (b *Runner) LeftBehind() []steps.LeftBehind {
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
func (b *Runner) noteVersion(all []steps.Step) {
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

// noteRestsOn adds what a pod's verdict rests on (steps.RestsOn of its
// steps all) to the bench's, its own IP ip written PodIPMark.
func (b *Runner) noteRestsOn(all []steps.Step, ip string) {
	lines := steps.RestsOn(all)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	for _, r := range lines {
		if ip != "" {
			r = strings.ReplaceAll(r, ip, PodIPMark)
		}
		if !b.seen[r] && len(b.restsOn) < MaxRestsOn {
			b.seen[r] = true
			b.restsOn = append(b.restsOn, r)
		}
	}
}

func (b *Runner) version() (string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rtName, b.rtVer
}

// ExitCode is the bench's: the worst of its pods' (session.Worst).
func (b *Runner) ExitCode(interrupted bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return session.Worst(b.codes, interrupted)
}

// Measured counts the pods of every level.
func Measured(r *Result) int {
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

// ReadBaseline reads a --compare baseline: a bench result as JSON.
func ReadBaseline(path string) (*Result, error) {
	data, err := limit.ReadFile(path, MaxBaseline, "a podstep bench result (JSON)")
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a podstep bench result (JSON): %v", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q: expected %q (the JSON of podstep bench -o json)", path, r.Schema, Schema)
	}
	if len(r.Levels) == 0 {
		return nil, fmt.Errorf("%s: levels: empty: the baseline measured no pods", path)
	}
	return &r, nil
}

// Output is -o json's one object: the result, and the comparison when
// --compare was given.
type Output struct {
	*Result
	Comparison *ComparisonJSON `json:"comparison,omitempty"`
}

// ComparisonJSON is a comparison as -o json writes it.
type ComparisonJSON struct {
	Baseline     string   `json:"baseline_started"`
	ThresholdPct float64  `json:"threshold_pct"`
	MinChangeMs  float64  `json:"min_change_ms"`
	Regressions  int      `json:"regressions"`
	Rows         []Row    `json:"rows"`
	Unmatched    []string `json:"unmatched,omitempty"`
}

// Write writes the result (and the comparison, when there is one) as text
// (tables) or json (one indented object).
func Write(w io.Writer, format string, res *Result, cmp *Comparison) error {
	if format == "json" {
		out := Output{Result: res}
		if cmp != nil {
			out.Comparison = &ComparisonJSON{Baseline: cmp.Base.Started.Format(time.RFC3339), ThresholdPct: cmp.ThresholdPct,
				MinChangeMs: cmp.MinChangeMs, Regressions: cmp.Regressions(), Rows: cmp.Rows, Unmatched: cmp.Unmatched}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("write the result: %w", err)
		}
		return nil
	}
	WriteText(w, res)
	if cmp != nil {
		WriteComparison(w, cmp)
	}
	return nil
}
