//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/live/livetest"
	"github.com/podstep/podstep/test/internal/testenv"
)

// TestLivePageInChromium opens podstep's live page (run --serve) in a real
// browser (Debian's chromium, headless, driven over the DevTools protocol
// on a pipe) while `run --sim` steps a pod whose calls are slowed, and
// checks that the steps appear while the run goes on: each step's bar is
// added to the page after the page opened and before the run ended, every
// step of the run is on the page at the end with its state, and the
// summary is shown. It measures, in the browser, how long after a step
// ended (the step's own timestamps, from the event) the page showed it:
// the bar is ≤ 200 ms (median). The simulated runtime is enough: the page
// is about the events, not the runtime.
func TestLivePageInChromium(t *testing.T) {
	bin := testenv.Require(t, "INTEGRATION", "hack/test.sh sets it", "PODSTEP_BIN")[0]
	br := livetest.Start(t)

	dir := t.TempDir()
	pod := filepath.Join(dir, "slow.yaml")
	if err := os.WriteFile(pod, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: slow-live
  annotations:
    sim.podstep.dev/delay.RunPodSandbox: "1500ms"
    sim.podstep.dev/delay.CreateContainer: "300ms"
    sim.podstep.dev/delay.StartContainer: "300ms"
    sim.podstep.dev/delay.StopContainer: "300ms"
    sim.podstep.dev/delay.StopPodSandbox: "300ms"
    sim.podstep.dev/delay.RemoveContainer: "300ms"
    sim.podstep.dev/delay.RemovePodSandbox: "300ms"
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
  - name: side
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--auto", "--sim", "-o", "json", "-f", pod, "--grace-period", "0",
		"--root-dir", filepath.Join(dir, "root"), "--log-dir", filepath.Join(dir, "logs"), "--serve", "127.0.0.1:0")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var url string
	for sc.Scan() {
		if m := regexp.MustCompile(`live page at (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	go func() { _, _ = bufio.NewReader(stderr).WriteTo(os.Stderr) }()
	if url == "" {
		_ = cmd.Process.Kill()
		t.Fatal("podstep did not say where the live page is")
	}
	opened := br.Open(t, url)
	waitErr := cmd.Wait()
	ended := livetest.NowMs()
	if waitErr != nil {
		t.Fatalf("run: %v\n%s", waitErr, stdout.String())
	}
	time.Sleep(300 * time.Millisecond) // the last events reach the page

	var run []struct {
		Type, Name, State string
		ID                int
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var s struct {
			Type, Name, State string
			ID                int
		}
		if json.Unmarshal([]byte(l), &s) == nil && s.Type == "step" {
			run = append(run, s)
		}
	}
	seen := br.Seen(t)
	rows := br.Rows(t)
	outcome := br.Text(t, "outcome")

	if len(run) < 12 {
		t.Fatalf("the run had %d steps", len(run))
	}
	if len(rows) != len(run) {
		t.Errorf("the page lists %d steps, the run had %d", len(rows), len(run))
	}
	for i := range min(len(rows), len(run)) {
		if rows[i].ID != run[i].ID || rows[i].State != run[i].State || rows[i].Name != run[i].Name {
			t.Errorf("page row %d: %+v; the run's step: %+v", i, rows[i], run[i])
		}
	}
	if !strings.HasPrefix(outcome, "running · exit 0") {
		t.Errorf("the page's outcome: %q", outcome)
	}
	var live, lat []float64
	for _, s := range seen {
		if s.Shown < opened || s.End < opened {
			continue // history: the step ended before the page was open
		}
		live = append(live, s.Shown)
		lat = append(lat, s.Shown-s.End)
	}
	// Steps appear while the run goes on: most of them after the page
	// opened, well before the run ended.
	during := 0
	for _, shown := range live {
		if shown < ended-500 {
			during++
		}
	}
	if len(live) < 8 || during < 5 {
		t.Fatalf("%d steps appeared live, %d of them ≥ 0.5 s before the run ended (want ≥ 8 and ≥ 5); seen %v", len(live), during, seen)
	}
	sort.Float64s(lat)
	med := lat[len(lat)/2]
	t.Logf("live page: %d steps shown live; step end → shown in the DOM: median %.1f ms, min %.1f, max %.1f (bar ≤ 200 ms)",
		len(lat), med, lat[0], lat[len(lat)-1])
	if med > 200 {
		t.Errorf("median latency %.1f ms > 200 ms", med)
	}
	if lat[0] < -5 {
		t.Errorf("a step was shown %.1f ms before it ended: clocks or timestamps are wrong", lat[0])
	}
}
