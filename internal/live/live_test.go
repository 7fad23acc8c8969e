package live

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// stream is one SSE client of a test server.
type stream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func open(t *testing.T, url string) *stream {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("/events: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	return &stream{resp: resp, sc: sc}
}

// next returns the next event's name ("" for a message) and data.
func (s *stream) next() (name, data string, ok bool) {
	for s.sc.Scan() {
		l := s.sc.Text()
		switch {
		case l == "":
			if name != "" || data != "" {
				return name, data, true
			}
		case strings.HasPrefix(l, "event: "):
			name = l[len("event: "):]
		case strings.HasPrefix(l, "data: "):
			data = l[len("data: "):]
		}
	}
	return "", "", false
}

// types reads until the stream ends (or n messages) and returns each
// message's "type" (events as "event:NAME").
func (s *stream) types(n int) []string {
	var out []string
	for len(out) < n || n < 0 {
		name, data, ok := s.next()
		if !ok {
			break
		}
		if name != "" {
			out = append(out, "event:"+name)
			continue
		}
		var m struct{ Type string }
		_ = json.Unmarshal([]byte(data), &m)
		out = append(out, m.Type)
	}
	return out
}

func line(typ string, i int) string { return fmt.Sprintf(`{"type":%q,"n":%d}`+"\n", typ, i) }

// TestLateJoin: a page that opens after lines were written gets them all
// (after "hello"), then the new ones, in order, none twice; the "call" lines
// are left out; a line split across writes is one message.
func TestLateJoin(t *testing.T) {
	s := New()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	_, _ = s.Hub.Write([]byte(line("start", 0) + line("plan", 1) + line("call", 2) + `{"type":"st`))
	_, _ = s.Hub.Write([]byte(`ep","n":3}` + "\n"))
	c := open(t, ts.URL)
	if got := strings.Join(c.types(4), " "); got != "event:hello start plan step" {
		t.Fatalf("history: %s", got)
	}
	_, _ = s.Hub.Write([]byte(line("step-started", 4) + line("call-sent", 5) + line("step", 6)))
	s.Close()
	if got := strings.Join(c.types(-1), " "); got != "step-started step event:end" {
		t.Fatalf("live: %s", got)
	}
}

// TestReset: Reset starts the pages over with another run (proxy --serve,
// a newer pod): an open page gets "hello" then only the new run's lines;
// a page that opens later gets only the new run.
func TestReset(t *testing.T) {
	s := New()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	_, _ = s.Hub.Write([]byte(line("start", 0) + line("plan", 1) + line("step", 2)))
	c := open(t, ts.URL)
	if got := strings.Join(c.types(4), " "); got != "event:hello start plan step" {
		t.Fatalf("before: %s", got)
	}
	s.Hub.Reset()
	_, _ = s.Hub.Write([]byte(line("start", 10) + line("plan", 11)))
	late := open(t, ts.URL)
	_, _ = s.Hub.Write([]byte(line("step", 12)))
	s.Close()
	if got := strings.Join(c.types(-1), " "); got != "event:hello start plan step event:end" {
		t.Errorf("the open page after Reset: %s", got)
	}
	if got := strings.Join(late.types(-1), " "); got != "event:hello start plan step event:end" {
		t.Errorf("a page opened after Reset: %s", got)
	}
	if st := s.Hub.Stats(); st.Dropped != 0 {
		t.Errorf("stats %+v: Reset dropped a page that reads", st)
	}
}

// TestSlowClient: a client that does not read never blocks Write; once its
// queue is full it is dropped, and when it comes back it gets the whole
// history again (drop-and-resync). A reading client gets everything.
func TestSlowClient(t *testing.T) {
	s := New()
	s.Hub.maxBuf = 64
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	defer s.Close()                // first: it ends the streams ts.Close waits for
	slow, _, _, ok := s.Hub.join() // registered, never read
	if !ok {
		t.Fatal("join")
	}
	fast := open(t, ts.URL)
	if got := fast.types(1); got[0] != "event:hello" {
		t.Fatalf("first: %v", got)
	}
	const n = 200
	var writing time.Duration
	for i := range n {
		w := time.Now()
		_, _ = s.Hub.Write([]byte(line("step", i)))
		writing += time.Since(w)
		if i%32 == 31 {
			time.Sleep(20 * time.Millisecond) // steps come apart; a reading page keeps up
		}
	}
	if d := writing; d > time.Second {
		t.Errorf("%d writes took %s with a client that does not read", n, d)
	}
	if st := s.Hub.Stats(); st.Dropped != 1 {
		t.Errorf("stats %+v: want the slow client dropped", st)
	}
	queued := 0
	for range slow.ch { // closed: what it had, then the end
		queued++
	}
	if queued != 64 {
		t.Errorf("the slow client had %d queued, want its bound 64", queued)
	}
	if got := fast.types(n); len(got) != n {
		t.Errorf("the reading client got %d messages, want %d", len(got), n)
	}
	again := open(t, ts.URL)
	if got := again.types(n + 1); len(got) != n+1 || got[0] != "event:hello" {
		t.Errorf("resync got %d messages (first %v), want hello and %d", len(got), got[:1], n)
	}
}

// runPod runs the manifest file on the simulated runtime with the server's
// recorder, as session.Recording.Tee wires it, after each step calling
// between (nil: nothing).
func runPod(t testing.TB, file string, s *Server, between func(steps.Event)) report.Timing {
	t.Helper()
	r := stepstest.New(t, file, nil)
	b, c, eng := r.Bundle, r.Client, r.Engine
	if s != nil {
		eng.Subscribe(s.Observe)
	}
	if between != nil {
		eng.Subscribe(func(ev steps.Event) {
			if ev.Kind == steps.StepDone {
				between(ev)
			}
		})
	}
	rt := render.Runtime{Endpoint: c.RuntimeEndpoint, Simulated: true, Why: "test"}
	pod := b.Pod.Namespace + "/" + b.Pod.Name
	h := record.Header{Podstep: "test", Manifest: record.ManifestOf(b, eng.Redactor())}
	if s != nil {
		if err := s.Start(h, eng, rt, pod); err != nil {
			t.Fatal(err)
		}
	}
	begin := time.Now()
	stepstest.Through(t, eng)
	timing := session.Timing(eng.Steps(), c.Calls(), time.Since(begin))
	if s != nil {
		if err := s.Finish(report.Summary{Pod: pod, Outcome: "running", Display: eng.PodState().Display}); err != nil {
			t.Fatal(err)
		}
	}
	return timing
}

// readAll reads a stream to its end.
func readAll(t *testing.T, s *stream) string {
	t.Helper()
	b, err := io.ReadAll(s.resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestThirtyClients: 30 pages open while a pod runs, joining at different
// steps, each get the same whole stream (the history, then live), ending
// with the summary; the Secret values of the manifest are in none of it.
func TestThirtyClients(t *testing.T) {
	s := New()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	const n = 30
	var mu sync.Mutex
	var clients []*stream
	join := func() {
		mu.Lock()
		defer mu.Unlock()
		clients = append(clients, open(t, ts.URL))
	}
	for range n / 2 {
		join()
	}
	stepsDone := 0
	runPod(t, "../../testdata/pods/secrets-expansion.yaml", s, func(steps.Event) {
		if stepsDone++; stepsDone <= n/2 && len(clients) < n {
			join() // late joiners, one per step
		}
	})
	for len(clients) < n {
		join()
	}
	s.Close()
	var first string
	for i, c := range clients {
		got := readAll(t, c)
		// The ids and the hello are the same; compare the data lines.
		var data []string
		for _, l := range strings.Split(got, "\n") {
			if strings.HasPrefix(l, "data: ") {
				data = append(data, l)
			}
		}
		all := strings.Join(data, "\n")
		if i == 0 {
			first = all
			if !strings.Contains(all, `"type":"summary"`) || strings.Count(all, `"type":"step"`) < 10 {
				t.Fatalf("client 0 got no whole run:\n%.2000s", all)
			}
		} else if all != first {
			t.Errorf("client %d got another stream (%d bytes, client 0 %d)", i, len(all), len(first))
		}
		for _, secret := range []string{"Pg-Pa55word-Xk39q", "xQ!9", "tok-7Hq2-Lm9W-pp31", "Unused-Secret-Zr71"} {
			if strings.Contains(got, secret) || strings.Contains(got, base64.StdEncoding.EncodeToString([]byte(secret))) {
				t.Errorf("client %d saw the Secret value %q", i, secret)
			}
		}
	}
	if st := s.Hub.Stats(); st.Dropped != 0 {
		t.Errorf("stats %+v: a client was dropped", st)
	}
}

// TestHostileText: text from outside (a container name, a message) never
// reaches the page as markup: the stream carries it JSON-escaped (no raw
// <, >, &), the script puts it in with textContent only, and the page has
// a strict Content-Security-Policy and no inline script.
func TestHostileText(t *testing.T) {
	s := New()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	hostile := `<img src=x onerror="alert(1)">&</script><script>alert(2)</script>`
	st := report.StepJSON{Type: "step", ID: 1, Name: "create/" + hostile, Container: hostile, Message: hostile, State: steps.Failed}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = s.Hub.Write(append(b, '\n'))
	c := open(t, ts.URL)
	c.types(2)
	s.Close()
	got := readAll(t, c)
	for _, raw := range []string{"<img", "<script", "</script", "&"} {
		if strings.Contains(got, raw) {
			t.Errorf("the stream has %q raw: %s", raw, got)
		}
	}
	_ = got

	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if strings.Contains(string(page), "<script>") || strings.Contains(string(page), "onload=") {
		t.Errorf("the page has inline script")
	}
	js, _ := files.ReadFile("live.js")
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(string(js), sink) {
			t.Errorf("live.js uses %s: text from the run must go in as textContent", sink)
		}
	}
}

// TestReadOnly: nothing but GET and HEAD is answered, nothing but the page,
// its script and style and the stream exists, and a name that is not
// loopback (DNS rebinding) gets nothing from a loopback page.
func TestReadOnly(t *testing.T) {
	s := New()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	defer s.Close()
	for _, tc := range []struct {
		method, path, host string
		code               int
	}{
		{"GET", "/", "", 200},
		{"GET", "/live.js", "", 200},
		{"HEAD", "/live.css", "", 200},
		{"POST", "/events", "", 405},
		{"PUT", "/", "", 405},
		{"DELETE", "/", "", 405},
		{"GET", "/admin", "", 404},
		{"GET", "/../etc/passwd", "", 404},
		{"GET", "/", "evil.example:80", 421},
		{"GET", "/", "localhost:8080", 200},
	} {
		req, _ := http.NewRequest(tc.method, ts.URL+tc.path, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s (Host %q): %d, want %d", tc.method, tc.path, tc.host, resp.StatusCode, tc.code)
		}
	}
}

// TestAddress: --serve's address: an empty host is loopback, loopback
// names pass, another host is refused without --serve-allow-remote.
func TestAddress(t *testing.T) {
	for _, tc := range []struct {
		in     string
		allow  bool
		want   string
		remote bool
		err    string
	}{
		{":8080", false, "127.0.0.1:8080", false, ""},
		{"localhost:8080", false, "localhost:8080", false, ""},
		{"[::1]:8080", false, "[::1]:8080", false, ""},
		{"127.0.0.2:0", false, "127.0.0.2:0", false, ""},
		{"0.0.0.0:8080", false, "", false, "not a loopback address"},
		{"192.0.2.1:8080", true, "192.0.2.1:8080", true, ""},
		{"8080", false, "", false, "expected [HOST]:PORT"},
	} {
		o := Flags{Addr: tc.in, AllowRemote: tc.allow}
		got, remote, err := o.Address()
		if got != tc.want || remote != tc.remote || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q allow=%v: %q %v %v; want %q %v %q", tc.in, tc.allow, got, remote, err, tc.want, tc.remote, tc.err)
		}
	}
}

// TestScenarioLine: a run of a built-in scenario gives the page a
// "scenario" line naming it and its lesson (the page named neither); in
// predict mode without the lesson (the quiz's answers); a run of a file,
// none.
func TestScenarioLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags map[string]string
		want  []string
		not   []string
	}{
		{"scenario", map[string]string{"scenario": "crashloop", "predict": "false"}, []string{`"type":"scenario"`, `"name":"crashloop"`, `"lesson":"`, `"fix":"`}, nil},
		{"predict", map[string]string{"scenario": "crashloop", "predict": "true"}, []string{`"type":"scenario"`, `"story":"`}, []string{`"lesson"`, `"fix"`}},
		{"a file", map[string]string{"scenario": ""}, nil, []string{`"type":"scenario"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			c := open(t, ts.URL)
			eng := stepstest.New(t, "../../testdata/pods/hello.yaml", nil).Engine
			if err := s.Start(record.Header{Podstep: "test", Flags: tc.flags}, eng, render.Runtime{Simulated: true}, "default/crashloop"); err != nil {
				t.Fatal(err)
			}
			s.Close()
			got := readAll(t, c)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("stream lacks %s:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("stream has %s:\n%s", w, got)
				}
			}
		})
	}
}
