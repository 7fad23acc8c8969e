package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// corpusDir is the real-world pod corpus: $PODSTEP_CORPUS, else
// ../shared/realworld beside the repository (this package is
// internal/sim, two levels below its root). "" when absent.
func corpusDir(t *testing.T) string {
	dir := os.Getenv("PODSTEP_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "realworld")
	}
	if _, err := os.Stat(filepath.Join(dir, "pods")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no real-world corpus at %s (set PODSTEP_CORPUS): %v", dir, err)
		}
		t.Skipf("no real-world corpus at %s (set PODSTEP_CORPUS)", dir)
	}
	return dir
}

// corpusVerdict is where one corpus pod ends on the simulated runtime.
type corpusVerdict struct {
	file    string
	refused string // the manifest's error, when podstep refuses it
	display string
	reason  string
	message string
	// restsOn are the start steps' RestsOn by container, and the other
	// steps' (image user) under "".
	restsOn map[string][]string
	// exited are the containers seen exited, and crashed those the
	// kubelet would restart after back-off.
	exited map[string]bool
}

// runCorpusPod runs one corpus pod to its end on a fresh simulated runtime.
func runCorpusPod(t *testing.T, file string) corpusVerdict {
	v := corpusVerdict{file: filepath.Base(file), restsOn: map[string][]string{}, exited: map[string]bool{}}
	if _, err := manifest.Load(file); err != nil {
		v.refused = err.Error()
		return v
	}
	run := stepstest.New(t, file, func(o *steps.Options) {
		o.MaxRestarts = 1
		o.Settle = 300 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng := run.Engine
	for !eng.Finished() && ctx.Err() == nil {
		if err := eng.Continue(ctx); err != nil {
			v.refused = "run: " + err.Error()
			return v
		}
	}
	snap := eng.PodState()
	v.display = snap.Display
	if f, failed := eng.Failed(); failed {
		v.reason, v.message = f.Result.Reason, f.Result.Message
	}
	for _, s := range eng.Steps() {
		if len(s.Result.RestsOn) > 0 {
			v.restsOn[s.Container] = append(v.restsOn[s.Container], s.Result.RestsOn...)
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), snap.Status.InitContainerStatuses...), snap.Status.ContainerStatuses...) {
		if cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			v.exited[cs.Name] = true
		}
	}
	_ = eng.Teardown(context.Background())
	return v
}

// TestCorpusVerdicts runs every pod of the real-world corpus
// (../shared/realworld/pods) on the simulated runtime, as `podstep run
// --sim` does, and checks that no verdict rests on something the
// simulator made up:
//   - no container exits, and no pod reaches CrashLoopBackOff, but by what
//     the simulator read of its command (a script, a command, a fault) or,
//     for a container its pod runs to completion, the assumption that it
//     does (labelled);
//   - no container fails runAsNonRoot because the simulator claimed its
//     image runs as root: an image it does not know is "user unknown",
//     and the create step says so;
//   - the genuine failures (objects no source defines, node labels this
//     machine lacks, absent host paths, unsupported volumes) keep their
//     kubelet reason.
//
// Probes (httpGet, tcpSocket) are not run here (no --wait-ready).
func TestCorpusVerdicts(t *testing.T) {
	dir := corpusDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "pods", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pods in %s: %v", dir, err)
	}
	sort.Strings(files)
	verdicts := make([]corpusVerdict, len(files))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			verdicts[i] = runCorpusPod(t, f)
		}()
	}
	wg.Wait()

	running := 0
	for _, v := range verdicts {
		line := v.file + "  " + v.display
		if v.reason != "" {
			line += "  " + v.reason + ": " + v.message
		}
		if v.refused != "" {
			line = v.file + "  refused: " + v.refused
		}
		t.Log(line)
		if v.display == "Running" || v.display == "Completed" {
			running++
		}
		if strings.HasPrefix(v.refused, "run: ") {
			t.Errorf("%s: %s", v.file, v.refused)
		}
		// Exits only from what was read, or the labelled run-to-completion assumption.
		for name := range v.exited {
			ro := strings.Join(v.restsOn[name], "; ")
			if ro == "" {
				t.Errorf("%s: container %s exited, and nothing says what that rests on", v.file, name)
			} else if strings.Contains(ro, "keeps running") && !strings.Contains(ro, "runs to completion") && !strings.HasPrefix(ro, "fault:") {
				t.Errorf("%s: container %s exited, though the simulator said it keeps running: %s", v.file, name, ro)
			}
		}
		if strings.Contains(v.display, "CrashLoopBackOff") || v.reason == "CrashLoopBackOff" {
			for name := range v.exited {
				for _, ro := range v.restsOn[name] {
					if strings.HasPrefix(ro, "assumed:") {
						t.Errorf("%s: CrashLoopBackOff of %s rests on an assumption: %s", v.file, name, ro)
					}
				}
			}
		}
		// runAsNonRoot: only a known image (busybox: no USER) runs as root.
		if strings.Contains(v.message, "image will run as root") && !strings.Contains(v.message, "busybox") {
			t.Errorf("%s: %s: the simulator claimed an image it does not know runs as root", v.file, v.message)
		}
		if want, ok := corpusGenuine[v.file[:3]]; ok && v.reason != want {
			t.Errorf("%s: reason %q (%s), want the genuine failure %q", v.file, v.reason, v.message, want)
		}
	}
	for _, f := range corpusUnknownUser {
		for _, v := range verdicts {
			if strings.HasPrefix(v.file, f) && !strings.Contains(strings.Join(v.restsOn[""], " ")+strings.Join(flatten(v.restsOn), " "), "assumed: image user unknown") {
				t.Errorf("%s: runAsNonRoot rests on the image's unknown user, and no step says so (%s %s)", v.file, v.display, v.reason)
			}
		}
	}
	t.Logf("%d of %d pods end Running or Completed", running, len(verdicts))
}

// corpusUnknownUser are the corpus pods (file prefixes) whose containers
// set runAsNonRoot with no runAsUser, on images the simulator does not know.
var corpusUnknownUser = []string{"001-", "002-", "003-", "005-", "018-", "019-", "020-"}

// corpusGenuine are corpus pods (by file number) that fail for reasons a
// kubelet gives too: a ConfigMap or Secret no source defines, a volume
// podstep cannot mount (claims, CSI, in-tree network volumes), node
// affinity this machine's node does not match, and 098, whose `ls` exits
// under restartPolicy Always. Their reason must not move. (The hostPath
// failures depend on the machine, and are left out.)
var corpusGenuine = map[string]string{
	"004": "CreateContainerConfigError",
	"005": "CreateContainerConfigError",
	"006": "CreateContainerConfigError",
	"007": "CreateContainerConfigError",
	"011": "NodeAffinity",
	"012": "FailedMount",
	"016": "FailedMount",
	"017": "FailedMount",
	"024": "FailedMount",
	"027": "FailedMount",
	"028": "CreateContainerConfigError",
	"029": "FailedMount",
	"032": "FailedMount",
	"034": "FailedMount",
	"035": "FailedMount",
	"038": "FailedMount",
	"042": "FailedMount",
	"043": "FailedMount",
	"045": "FailedMount",
	"046": "FailedMount",
	"047": "FailedMount",
	"048": "FailedMount",
	"049": "FailedMount",
	"050": "FailedMount",
	"054": "NodeAffinity",
	"063": "FailedMount",
	"064": "FailedMount",
	"065": "FailedMount",
	"066": "FailedMount",
	"067": "FailedMount",
	"093": "FailedMount",
	"094": "FailedMount",
	"096": "FailedMount",
	"098": "CrashLoopBackOff",
	"108": "NodeAffinity",
	"110": "NodeAffinity",
	"113": "FailedMount",
	"115": "FailedMount",
}

func flatten(m map[string][]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v...)
	}
	return out
}

// probedCorpusPods are the corpus pods (file paths) with an httpGet,
// tcpSocket or grpc startup or readiness probe aimed at the pod.
func probedCorpusPods(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "pods", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []string
	for _, f := range files {
		b, err := manifest.Load(f)
		if err != nil {
			continue
		}
		spec := b.Pod.Spec
		for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
			probed := false
			for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe} {
				probed = probed || p != nil && (p.HTTPGet != nil && p.HTTPGet.Host == "" || p.TCPSocket != nil && p.TCPSocket.Host == "" || p.GRPC != nil)
			}
			if probed {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// TestCorpusProbes runs the corpus pods whose startup or readiness probes
// go to the pod (httpGet, tcpSocket, grpc) with the ready stage
// (--wait-ready): each pod whose containers all start ends Ready, its
// probes answered by the simulator's listeners through podstep's real
// probers (nothing "not sent"), and the ready step says what that rests
// on. The pods run concurrently; the slowest waits its probe's
// initialDelaySeconds (20 s).
func TestCorpusProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits the corpus probes' initialDelaySeconds (-short)")
	}
	files := probedCorpusPods(t, corpusDir(t))
	if len(files) < 10 {
		t.Fatalf("%d probed pods in the corpus, want at least 10", len(files))
	}
	type verdict struct {
		file, display, ready, failed string
		started                      bool
		restsOn, notSent             []string
	}
	verdicts := make([]verdict, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := verdict{file: filepath.Base(f)}
			defer func() { verdicts[i] = v }()
			run := stepstest.New(t, f, func(o *steps.Options) {
				o.MaxRestarts = 1
				o.WaitReady = true
				o.ReadyTimeout = 45 * time.Second
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			eng := run.Engine
			defer func() { _ = eng.Teardown(context.Background()) }()
			for !eng.Finished() && ctx.Err() == nil {
				if err := eng.Continue(ctx); err != nil {
					v.failed = "run: " + err.Error()
					return
				}
			}
			snap := eng.PodState()
			v.display, v.ready = snap.Display, snap.Ready
			if fs, failed := eng.Failed(); failed {
				v.failed = fs.Name + ": " + fs.Result.Reason + ": " + fs.Result.Message
			}
			for _, s := range eng.Steps() {
				if s.Stage == steps.StageReady && (s.State == steps.Done || s.State == steps.Failed) {
					v.started = true
					v.restsOn = append(v.restsOn, s.Result.RestsOn...)
				}
				for _, d := range s.Result.Details {
					if strings.Contains(d.Value, "not sent") {
						v.notSent = append(v.notSent, s.Name+": "+d.Key+": "+d.Value)
					}
				}
			}
		}()
	}
	wg.Wait()
	ready := 0
	for _, v := range verdicts {
		t.Logf("%s  %s %s  %s", v.file, v.display, v.ready, v.failed)
		if len(v.notSent) > 0 {
			t.Errorf("%s: probes not sent: %v", v.file, v.notSent)
		}
		if !v.started {
			continue // a genuine failure before the ready stage (TestCorpusVerdicts)
		}
		if v.failed != "" {
			t.Errorf("%s: reached the ready stage and failed: %s", v.file, v.failed)
			continue
		}
		ready++
		if ro := strings.Join(v.restsOn, "; "); !strings.Contains(ro, "the simulator's listener on 127.") {
			t.Errorf("%s: Ready, and the ready step does not say it rests on the simulator's listener: %q", v.file, ro)
		}
	}
	t.Logf("%d of %d probed pods reach the ready stage and end Ready", ready, len(verdicts))
	if ready == 0 {
		t.Error("no probed pod reached the ready stage")
	}
}
