package bench

import (
	"sort"
	"time"

	"github.com/podstep/podstep/internal/steps"
)

// Schema names the JSON layout of a Result; a reader refuses another.
const Schema = "podstep.dev/bench/v1"

// MaxBaseline is the largest bench result --compare reads (a result of
// MaxPods pods at a few levels is a few MiB).
const MaxBaseline = 64 << 20

// MaxPods bounds bench's -n and --warmup: pods per concurrency level.
const MaxPods = 100000

// Result is one `podstep bench`: a Level per concurrency it ran at.
type Result struct {
	Schema string `json:"schema"`
	// File and Pod are the manifest and its pod as namespace/name.
	File string `json:"file"`
	Pod  string `json:"pod"`
	// Runtime is the runtime the pods ran on.
	Runtime Runtime `json:"runtime"`
	// Simulated repeats Runtime.Simulated at the top: figures of the
	// built-in simulated runtime say nothing about a node.
	Simulated bool `json:"simulated"`
	// N is the measured pods per level, Warmup the unmeasured pods run
	// before them.
	N      int `json:"n"`
	Warmup int `json:"warmup"`
	// Started is when the bench began.
	Started time.Time `json:"started"`
	Levels  []Level   `json:"levels"`
	// RestsOn is what the pods' verdicts rest on, on the simulated runtime
	// (as run's summary's rests_on: steps.RestsOn of each pod, warm-up
	// ones too, each line once, a pod's own IP written PodIPMark), at most
	// MaxRestsOn lines.
	RestsOn []string `json:"rests_on,omitempty"`
}

// MaxRestsOn bounds Result.RestsOn.
const MaxRestsOn = 100

// PodIPMark stands for each pod's own IP in Result.RestsOn (the
// simulator gives every pod its own loopback IP, which its probes' lines
// name).
const PodIPMark = "POD-IP"

// Runtime is the runtime and how it was chosen.
type Runtime struct {
	Endpoint  string `json:"endpoint"`
	Simulated bool   `json:"simulated"`
	Why       string `json:"why,omitempty"`
	// Name and Version are what the runtime's CRI Version answered.
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// Level is the pods run at one concurrency.
type Level struct {
	// Concurrency is how many pods were in creation or teardown at once.
	Concurrency int `json:"concurrency"`
	// Pods is how many pods were measured; Failed how many of them failed.
	Pods   int `json:"pods"`
	Failed int `json:"failed"`
	// WallMs is the level's wall time; PodsPerSec its throughput.
	WallMs     float64 `json:"wall_ms"`
	PodsPerSec float64 `json:"pods_per_sec"`
	// CPUPerPodMs is podstep's process CPU time (user+system) per pod over
	// the level (bench runs the simulated runtime in a process of its own).
	CPUPerPodMs float64 `json:"cpu_per_pod_ms"`
	// Phases are per phase, in Phases order, each phase any pod had.
	Phases []Series `json:"phases"`
	// Methods are per CRI method, each sample one call; PerPod is the
	// calls per pod.
	Methods []Series `json:"methods"`
	// SLI is pod_start_sli_duration_seconds and Total
	// pod_start_total_duration_seconds, as the kubelet defines them (in ms).
	SLI   Series `json:"pod_start_sli_duration"`
	Total Series `json:"pod_start_total_duration"`
	// Floor is the CRI floor (time in CRI calls) per pod; Own podstep's
	// own time per pod (wall less CRI calls less deliberate waits); Wait
	// the deliberate waits; Wall each pod's creation and teardown.
	Floor Series `json:"cri_floor"`
	Own   Series `json:"own"`
	Wait  Series `json:"wait"`
	Wall  Series `json:"wall"`
	// OwnSteps is podstep's own time per pod in the steps of each kind
	// (Pod.OwnSteps), in the order of the steps: where Own goes.
	OwnSteps []Series `json:"own_steps"`
	// OwnPct is the median own time as a percentage of the median CRI floor.
	OwnPct float64 `json:"own_pct_of_floor"`
	// Errors are the failed pods' first failures.
	Errors []string `json:"errors,omitempty"`
}

// Build summarises the pods measured at one concurrency, less those
// interrupted. wall is the level's wall time and cpu the process CPU time
// it used.
func Build(concurrency int, all []Pod, wall, cpu time.Duration) Level {
	var pods []Pod
	for _, p := range all {
		if !p.Interrupted {
			pods = append(pods, p)
		}
	}
	l := Level{Concurrency: concurrency, Pods: len(pods), WallMs: ms(int64(wall))}
	if wall > 0 {
		l.PodsPerSec = round(float64(len(pods)) / wall.Seconds())
	}
	if len(pods) > 0 {
		l.CPUPerPodMs = ms(int64(cpu) / int64(len(pods)))
	}
	for _, ph := range Phases {
		var vals []float64
		for _, p := range pods {
			if v, ok := p.Phases[ph]; ok {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 {
			l.Phases = append(l.Phases, Summarize(ph, vals))
		}
	}
	byMethod := map[string][]float64{}
	for _, p := range pods {
		for _, c := range p.Calls {
			byMethod[c.Method] = append(byMethod[c.Method], c.Ms)
		}
	}
	methods := make([]string, 0, len(byMethod))
	for m := range byMethod {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	for _, m := range methods {
		s := Summarize(m, byMethod[m])
		if len(pods) > 0 {
			s.PerPod = round(float64(len(byMethod[m])) / float64(len(pods)))
		}
		l.Methods = append(l.Methods, s)
	}
	l.OwnSteps = ownSteps(pods)
	var sli, total, floor, own, wait, wallv []float64
	for _, p := range pods {
		if p.Failed != "" {
			l.Failed++
			l.Errors = append(l.Errors, p.Name+": "+p.Failed)
		}
		if p.Started {
			total = append(total, p.TotalMs)
			if !p.Stateful {
				sli = append(sli, p.SLIMs)
			}
		}
		floor, own = append(floor, p.CRIMs), append(own, p.OwnMs)
		wait, wallv = append(wait, p.WaitMs), append(wallv, p.WallMs)
	}
	l.SLI = Summarize("pod_start_sli_duration", sli)
	l.Total = Summarize("pod_start_total_duration", total)
	l.Floor, l.Own = Summarize("cri_floor", floor), Summarize("own", own)
	l.Wait, l.Wall = Summarize("wait", wait), Summarize("wall", wallv)
	if l.Floor.P50 > 0 {
		l.OwnPct = round(100 * l.Own.P50 / l.Floor.P50)
	}
	return l
}

// ownSteps summarises the pods' own time per step kind, in the order of
// steps.Kind (the order a pod goes through them).
func ownSteps(pods []Pod) []Series {
	byKind := map[string][]float64{}
	for _, p := range pods {
		for k, v := range p.OwnSteps {
			byKind[k] = append(byKind[k], v)
		}
	}
	var out []Series
	for k := steps.Kind(1); k.String() != ""; k++ {
		if vals, ok := byKind[k.String()]; ok {
			out = append(out, Summarize(k.String(), vals))
		}
	}
	return out
}
