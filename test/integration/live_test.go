//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (hack/test.sh installs it: apt-get install -y chromium)")
	}
	br := startBrowser(t, chromium)

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
	opened := br.open(t, url)
	waitErr := cmd.Wait()
	ended := nowMs()
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
	var seen []struct {
		Step  int     `json:"step"`
		End   float64 `json:"end"`
		Shown float64 `json:"shown"`
	}
	br.eval(t, "JSON.stringify(window.__seen || [])", &seen)
	var rows []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Name  string `json:"name"`
	}
	br.eval(t, `JSON.stringify([...document.querySelectorAll("#steps li")].map(li => ({id: +li.dataset.step, state: li.dataset.state, name: li.querySelector(".name").textContent})))`, &rows)
	var outcome string
	br.eval(t, `JSON.stringify(document.getElementById("outcome").textContent)`, &outcome)

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

func nowMs() float64 { return float64(time.Now().UnixNano()) / 1e6 }

// browser is headless chromium driven over --remote-debugging-pipe: JSON
// messages ending in NUL, commands on fd 3, answers and events on fd 4.
type browser struct {
	mu      sync.Mutex
	in      *os.File
	id      int
	waiting map[int]chan json.RawMessage
	session string
}

func startBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	cmdR, cmdW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	b := &browser{in: cmdW, waiting: map[int]chan json.RawMessage{}}
	t.Cleanup(func() {
		cmdW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		rd := bufio.NewReader(outR)
		for {
			msg, err := rd.ReadBytes(0)
			if err != nil {
				return
			}
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
				continue
			}
			b.mu.Lock()
			ch := b.waiting[m.ID]
			delete(b.waiting, m.ID)
			b.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- append(json.RawMessage(`{"__error":`), append(m.Error, '}')...)
				} else {
					ch <- m.Result
				}
			}
		}
	}()
	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	b.call(t, "", "Target.getTargets", nil, &targets)
	var page string
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			page = ti.TargetID
		}
	}
	if page == "" {
		t.Fatalf("chromium has no page target: %+v\n%s", targets, errOut.String())
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	b.call(t, "", "Target.attachToTarget", map[string]any{"targetId": page, "flatten": true}, &att)
	b.session = att.SessionID
	b.call(t, b.session, "Page.enable", nil, nil)
	// In the browser, when each timeline bar is added to the page: the
	// time it is in the DOM, and the step's end from the event.
	b.call(t, b.session, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `
window.__seen = [];
new MutationObserver((ms) => {
  const now = performance.timeOrigin + performance.now();
  for (const m of ms) for (const n of m.addedNodes) {
    if (n.nodeType !== 1) continue;
    const bars = n.matches(".bar") ? [n] : [...n.querySelectorAll(".bar")];
    for (const b of bars) window.__seen.push({step: +b.dataset.step, end: +b.dataset.end, shown: now});
  }
}).observe(document, {childList: true, subtree: true});`}, nil)
	return b
}

// call sends a command and decodes its result into out.
func (b *browser) call(t *testing.T, session, method string, params any, out any) {
	t.Helper()
	b.mu.Lock()
	b.id++
	id := b.id
	ch := make(chan json.RawMessage, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(data, 0)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case res := <-ch:
		if bytes.HasPrefix(res, []byte(`{"__error":`)) {
			t.Fatalf("%s: %s", method, res)
		}
		if out != nil {
			if err := json.Unmarshal(res, out); err != nil {
				t.Fatalf("%s: %v: %s", method, err, res)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer from chromium", method)
	}
}

// open navigates to url and waits until the page's stream is live; it
// returns then (ms since the epoch).
func (b *browser) open(t *testing.T, url string) float64 {
	t.Helper()
	b.call(t, b.session, "Page.navigate", map[string]any{"url": url}, nil)
	for range 200 {
		var state string
		b.eval(t, `JSON.stringify(document.getElementById("conn") ? document.getElementById("conn").textContent : "")`, &state)
		if state == "live" {
			return nowMs()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the page's stream did not open")
	return 0
}

// eval evaluates a JS expression returning a JSON string, decoded into out.
func (b *browser) eval(t *testing.T, expr string, out any) {
	t.Helper()
	var res struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	b.call(t, b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	s, ok := res.Result.Value.(string)
	if res.ExceptionDetails != nil || !ok {
		t.Fatalf("eval %s: %v %v", expr, res.Result.Value, res.ExceptionDetails)
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("eval %s: %v: %s", expr, err, s)
	}
}

var _ = fmt.Sprintf
