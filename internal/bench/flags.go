package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/session"
)

// MaxConcurrency bounds --concurrency and --scale: stated once, as
// session.BenchMaxConcurrency (CheckFlagBounds refuses a larger
// --concurrency before bench runs).
const MaxConcurrency = session.BenchMaxConcurrency

// Flags are bench's own flags (the pod's are session.Options).
type Flags struct {
	N, Warmup, Concurrency int
	Scale                  string
	Threshold              float64
	MinChange              time.Duration
	Compare                string
	// ThresholdSet, ConcurrencySet: the flag was given.
	ThresholdSet, ConcurrencySet bool
}

// Check checks the flags and returns the concurrency levels to run
// (--concurrency, or each of --scale); an error is bad usage.
func Check(f Flags) ([]int, error) {
	if f.N < 1 || f.N > MaxPods {
		return nil, fmt.Errorf("-n/--count %d: expected 1 to %d pods", f.N, MaxPods)
	}
	if f.Warmup < 0 || f.Warmup > MaxPods {
		return nil, fmt.Errorf("--warmup %d: expected 0 to %d pods", f.Warmup, MaxPods)
	}
	if !(f.Threshold >= 0 && f.Threshold <= 1e6) { // NaN too
		return nil, fmt.Errorf("--threshold %g: expected a percentage from 0 to 1e6", f.Threshold)
	}
	if f.MinChange < 0 {
		return nil, fmt.Errorf("--min-change %s: expected a duration ≥ 0", f.MinChange)
	}
	if f.ThresholdSet && f.Compare == "" {
		return nil, fmt.Errorf("--threshold goes with --compare BASE.json")
	}
	if f.Scale != "" && f.ConcurrencySet {
		return nil, fmt.Errorf("--concurrency and --scale: give one (--scale runs each concurrency in turn)")
	}
	if f.Concurrency < 1 || f.Concurrency > MaxConcurrency {
		return nil, fmt.Errorf("--concurrency %d: expected 1 to %d", f.Concurrency, MaxConcurrency)
	}
	levels := []int{f.Concurrency}
	if f.Scale != "" {
		levels = nil
		for _, v := range strings.Split(f.Scale, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || k < 1 || k > MaxConcurrency {
				return nil, fmt.Errorf("--scale %q: %q is not a concurrency from 1 to %d (expected e.g. 1,2,4,8,16)", f.Scale, v, MaxConcurrency)
			}
			levels = append(levels, k)
		}
	}
	return levels, nil
}

// SimFlags are the sim-serve flags that make bench's simulated runtime
// (a process of its own) read image configs as run's does in podstep's
// process: fl with the mode resolved (given: --image-config was given,
// else imageconfig.EnvMode may turn it off). The one child serves every
// pod, so each image's config is read once and cached by digest. nil when
// off; an error is bad usage.
func SimFlags(fl imageconfig.Flags, given bool) ([]string, error) {
	fetcher, err := fl.Fetcher(given)
	if err != nil || fetcher == nil {
		return nil, err
	}
	out := []string{"--image-config", imageconfig.ModeAuto, "--image-config-timeout", fl.Timeout.String()}
	for _, r := range fl.Insecure {
		out = append(out, "--image-config-insecure", r)
	}
	if fl.NoCache {
		out = append(out, "--image-config-no-cache")
	}
	return out, nil
}
