// Package livetest opens podstep's live page (internal/live, --serve) in a
// real browser for the integration and cluster suites: Debian's chromium,
// headless, driven over the DevTools protocol on a pipe. A script added to
// every page notes when each timeline bar enters the DOM (Seen), so a test
// can tell steps that appeared while the run went on from history.
package livetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// NowMs is the time in ms since the epoch, as the page's Seen times are.
func NowMs() float64 { return float64(time.Now().UnixNano()) / 1e6 }

// Browser is headless chromium driven over --remote-debugging-pipe: JSON
// messages ending in NUL, commands on fd 3, answers and events on fd 4.
type Browser struct {
	mu      sync.Mutex
	in      *os.File
	id      int
	waiting map[int]chan json.RawMessage
	session string
}

// Start starts chromium (hack/test.sh installs it: apt-get install -y
// chromium; its absence fails the test) with one page, stopped when the
// test ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (hack/test.sh installs it: apt-get install -y chromium)")
	}
	// A chromium that does not answer its first command (seen once in
	// the cluster suite: 30 s of silence at start) is killed and started
	// again, once.
	var b *Browser
	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	var errOut bytes.Buffer
	for try := 1; ; try++ {
		var stop func()
		b, stop = launch(t, chromium, &errOut)
		res, ok := b.send(t, "", "Target.getTargets", nil, 30*time.Second)
		if ok {
			if err := json.Unmarshal(res, &targets); err != nil {
				t.Fatalf("Target.getTargets: %v: %s", err, res)
			}
			break
		}
		stop()
		if try == 2 {
			t.Fatalf("chromium answered no Target.getTargets in 30 s, twice; its stderr:\n%s", errOut.String())
		}
		t.Logf("chromium answered no Target.getTargets in 30 s: started again; its stderr:\n%s", errOut.String())
		errOut.Reset()
	}
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
	b.Call(t, "", "Target.attachToTarget", map[string]any{"targetId": page, "flatten": true}, &att)
	b.session = att.SessionID
	b.Call(t, b.session, "Page.enable", nil, nil)
	// In the browser, when each timeline bar is added to the page: the
	// time it is in the DOM, the step's end from the event, and the pod
	// the page shows then.
	b.Call(t, b.session, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `
window.__seen = [];
new MutationObserver((ms) => {
  const now = performance.timeOrigin + performance.now();
  for (const m of ms) for (const n of m.addedNodes) {
    if (n.nodeType !== 1) continue;
    const bars = n.matches(".bar") ? [n] : [...n.querySelectorAll(".bar")];
    const pod = document.getElementById("pod") ? document.getElementById("pod").textContent : "";
    for (const b of bars) window.__seen.push({step: +b.dataset.step, end: +b.dataset.end, shown: now, pod: pod});
  }
}).observe(document, {childList: true, subtree: true});`}, nil)
	return b
}

// launch starts headless chromium on a DevTools pipe, its stderr into
// errOut; stop kills it (also when the test ends).
func launch(t testing.TB, chromium string, errOut *bytes.Buffer) (b *Browser, stop func()) {
	t.Helper()
	cmdR, cmdW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // its org.chromium.Chromium.* dirs go with the test
	cmd.Stderr = errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	b = &Browser{in: cmdW, waiting: map[int]chan json.RawMessage{}}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmdW.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	go b.read(outR)
	return b, stop
}

// read hands each answer to the call waiting for it.
func (b *Browser) read(out *os.File) {
	rd := bufio.NewReader(out)
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
}

// Call sends a DevTools command (to session, "" for the browser) and
// decodes its result into out (nil: ignored).
func (b *Browser) Call(t testing.TB, session, method string, params any, out any) {
	t.Helper()
	res, ok := b.send(t, session, method, params, 30*time.Second)
	if !ok {
		t.Fatalf("%s: no answer from chromium", method)
	}
	if bytes.HasPrefix(res, []byte(`{"__error":`)) {
		t.Fatalf("%s: %s", method, res)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s: %v: %s", method, err, res)
		}
	}
}

// send sends a DevTools command and waits up to wait for its answer
// (false: none came).
func (b *Browser) send(t testing.TB, session, method string, params any, wait time.Duration) (json.RawMessage, bool) {
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
		return res, true
	case <-time.After(wait):
		return nil, false
	}
}

// Session is the page's DevTools session, for Call (Emulation, Page).
func (b *Browser) Session() string { return b.session }

// Open navigates the page to url and waits until the page's stream is
// live; it returns then (NowMs).
func (b *Browser) Open(t testing.TB, url string) float64 {
	t.Helper()
	b.Call(t, b.session, "Page.navigate", map[string]any{"url": url}, nil)
	for range 200 {
		var state string
		b.Eval(t, `JSON.stringify(document.getElementById("conn") ? document.getElementById("conn").textContent : "")`, &state)
		if state == "live" {
			return NowMs()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the page's stream did not open")
	return 0
}

// Eval evaluates a JS expression returning a JSON string, decoded into out.
func (b *Browser) Eval(t testing.TB, expr string, out any) {
	t.Helper()
	var res struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	b.Call(t, b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	s, ok := res.Result.Value.(string)
	if res.ExceptionDetails != nil || !ok {
		t.Fatalf("eval %s: %v %v", expr, res.Result.Value, res.ExceptionDetails)
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("eval %s: %v: %s", expr, err, s)
	}
}

// Bar is a timeline bar as it entered the page: its step, the step's end
// (from the event), when the bar was in the DOM (ms since the epoch), and
// the pod the page showed (its header) then.
type Bar struct {
	Step  int     `json:"step"`
	End   float64 `json:"end"`
	Shown float64 `json:"shown"`
	Pod   string  `json:"pod"`
}

// Seen is every bar added to the page since it was opened, in order.
func (b *Browser) Seen(t testing.TB) []Bar {
	t.Helper()
	var seen []Bar
	b.Eval(t, "JSON.stringify(window.__seen || [])", &seen)
	return seen
}

// Row is a step of the page's step list.
type Row struct {
	ID    int    `json:"id"`
	State string `json:"state"`
	Name  string `json:"name"`
}

// Rows is the page's step list now.
func (b *Browser) Rows(t testing.TB) []Row {
	t.Helper()
	var rows []Row
	b.Eval(t, `JSON.stringify([...document.querySelectorAll("#steps li")].map(li => ({id: +li.dataset.step, state: li.dataset.state, name: li.querySelector(".name").textContent})))`, &rows)
	return rows
}

// Text is the text of the page's element id ("" when there is none):
// "pod", "outcome", "conn", "display".
func (b *Browser) Text(t testing.TB, id string) string {
	t.Helper()
	var s string
	b.Eval(t, `JSON.stringify(document.getElementById(`+jsString(id)+`) ? document.getElementById(`+jsString(id)+`).textContent : "")`, &s)
	return s
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
