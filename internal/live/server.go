package live

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
)

//go:embed page.html.tmpl live.js live.css
var files embed.FS

// pageTmpl is the page, parsed on first use (not in the package's init:
// every podstep command would pay for it, issue 36).
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(files, "page.html.tmpl"))
})

// CSP is the page's Content-Security-Policy: its own script, style and
// event stream, nothing else; no inline script, no frames, no forms.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Flags are --serve and --serve-allow-remote, bound by AddFlags on run,
// replay and proxy.
type Flags struct {
	Addr        string
	AllowRemote bool
}

// AddFlags binds --serve and --serve-allow-remote to f.
func (o *Flags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Addr, "serve", "", "serve a live page of the run (steps, pod, events, timeline) at this address, e.g. :8080 (loopback unless --serve-allow-remote); it stops with the command")
	f.BoolVar(&o.AllowRemote, "serve-allow-remote", false, "let --serve listen on an address other than loopback: anyone who reaches it sees the run (redacted)")
}

// Address resolves --serve: an empty host is 127.0.0.1; another host must
// be loopback unless AllowRemote. remote says it is not loopback.
func (o *Flags) Address() (addr string, remote bool, err error) {
	a := strings.TrimPrefix(strings.TrimPrefix(o.Addr, "http://"), "tcp://")
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", false, session.Usagef("--serve %q: expected [HOST]:PORT, e.g. :8080 or 127.0.0.1:8080 (%v)", o.Addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	addr = net.JoinHostPort(host, port)
	if loopback(host) {
		return addr, false, nil
	}
	if !o.AllowRemote {
		return "", false, session.Usagef("--serve %s: %s is not a loopback address; the page shows the run to whoever reaches it: add --serve-allow-remote to mean it", o.Addr, host)
	}
	return addr, true, nil
}

// loopback says whether host is localhost or a loopback IP.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Server is the live page: an HTTP server over a Hub. A nil *Server does
// nothing, so a command without --serve calls it the same way.
type Server struct {
	Hub    *Hub
	rec    *record.Recorder
	srv    *http.Server
	ln     net.Listener
	remote bool

	qmu     sync.Mutex
	queue   chan steps.Event // nil before Start and after Finish
	drained chan struct{}
	once    sync.Once
}

// Start listens on --serve and serves the page; nil (and no error) without
// --serve. A bad address is bad usage (exit 2); one that cannot be bound
// is too. It says where on stderr, with a warning when not on loopback.
func (o *Flags) Start(stderr io.Writer) (*Server, error) {
	if o.Addr == "" {
		return nil, nil
	}
	addr, remote, err := o.Address()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, session.Usagef("--serve %s: %v", o.Addr, err)
	}
	s := New()
	s.remote = remote
	s.ln = ln
	go s.serve()
	fmt.Fprintf(stderr, "podstep: live page at http://%s/ (read-only; stops with this command)\n", ln.Addr())
	if remote {
		fmt.Fprintf(stderr, "podstep: warning: --serve %s is not loopback: anyone who reaches it sees this run (secrets are redacted, as in every output)\n", ln.Addr())
	}
	return s, nil
}

// URL is where the page is served ("" when the server does not listen):
// the TUI shows it on its status line.
func (s *Server) URL() string {
	if s == nil || s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String() + "/"
}

// New returns a server (not listening: Handler serves it, as tests do).
func New() *Server {
	s := &Server{Hub: NewHub()}
	s.rec = record.New(s.Hub, false)
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second}
	return s
}

func (s *Server) serve() {
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = err // the run goes on without its page
	}
}

// Addr is where the server listens ("" for nil or not listening).
func (s *Server) Addr() string {
	if s == nil || s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Recorder is the recorder whose lines the page shows (nil for a nil
// Server): session.Recording.Tee gives it the run's lines, exactly as
// --record's file gets them (redacted, -o json's step objects).
func (s *Server) Recorder() *record.Recorder {
	if s == nil {
		return nil
	}
	return s.rec
}

// Observe is the page's engine observer. It costs the engine's goroutine
// one channel send: the recorder encodes the lines on a goroutine of its
// own (a queue of QueueLen events; a full one makes the engine wait). The
// calls' events are left out (the page takes a step's calls from its step
// line).
func (s *Server) Observe(ev steps.Event) {
	if ev.Kind == steps.CallSent || ev.Kind == steps.CallDone {
		return
	}
	light(&ev)
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.queue != nil {
		s.queue <- ev
	}
}

// light leaves out of an event what the page does not show and would cost
// the most to encode: the CRI messages (the requests a step will send, each
// call's request and response). The calls keep their method, code, error
// and timing. ev.Step is the engine's copy; its Calls are copied here.
func light(ev *steps.Event) {
	ev.Step.Requests = nil
	if len(ev.Step.Calls) > 0 {
		calls := make([]cri.Call, len(ev.Step.Calls))
		for i, c := range ev.Step.Calls {
			c.Request, c.Response = nil, nil
			calls[i] = c
		}
		ev.Step.Calls = calls
	}
}

// QueueLen bounds the engine events waiting for the page's encoder.
const QueueLen = 1024

// Start writes the recording's first lines and starts the encoder.
func (s *Server) Start(h record.Header, src record.Source, rt render.Runtime, pod string) error {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.queue != nil {
		return nil
	}
	s.queue, s.drained = make(chan steps.Event, QueueLen), make(chan struct{})
	rec, queue, drained := s.rec, s.queue, s.drained
	go func() {
		defer close(drained)
		for ev := range queue {
			rec.Observe(ev)
		}
	}()
	if err := rec.Start(h, noLogs{src}, rt, pod); err != nil {
		return err
	}
	s.nameScenario(h)
	return nil
}

// Scenario is the page's "scenario" line: the built-in scenario the run
// is (its --scenario flag), for the page to name it and its lesson
// beside the pod. In predict mode (--predict) the lesson is left out: it
// would give the answers away. Only the page gets this line, not a
// recording.
type Scenario struct {
	Type   string `json:"type"` // "scenario"
	Name   string `json:"name"`
	Story  string `json:"story"`
	Lesson string `json:"lesson,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// nameScenario sends the page the scenario the recorded run is, if any.
func (s *Server) nameScenario(h record.Header) {
	name := h.Flags["scenario"]
	if name == "" {
		return
	}
	sc, err := scenario.Get(name)
	if err != nil {
		return
	}
	line := Scenario{Type: "scenario", Name: sc.Name, Story: sc.Lesson.Story}
	if h.Flags["predict"] != "true" {
		line.Lesson, line.Fix = sc.Lesson.Wrong, sc.Lesson.Fix
	}
	data, err := json.Marshal(line)
	if err != nil {
		return
	}
	_, _ = s.Hub.Write(append(data, '\n'))
}

// Note sends the pages one line of their own, not a recording's: `podstep
// proxy`'s stuck-at view ({"type":"stuck",...}), which the page shows as
// the calls in flight, their ages ticking, and its PLEG notes
// ({"type":"pleg",...}), the node's banner. A nil Server drops it.
func (s *Server) Note(line []byte) {
	if s == nil || len(line) == 0 {
		return
	}
	if line[len(line)-1] != '\n' {
		line = append(line[:len(line):len(line)], '\n')
	}
	_, _ = s.Hub.Write(line)
}

// Switch makes the page show another run from its start (proxy --serve:
// a newer pod): what was queued of the run shown so far is written, that
// run ends without a summary, and every open page starts over (Hub.Reset)
// with the new run's first lines.
func (s *Server) Switch(h record.Header, src record.Source, rt render.Runtime, pod string) error {
	s.drain()
	s.qmu.Lock()
	old := s.rec
	s.rec = record.New(s.Hub, false)
	s.qmu.Unlock()
	_ = old.Close() // its last buffered lines, before the pages start over
	s.Hub.Reset()
	return s.Start(h, src, rt, pod)
}

// noLogs is the run without its container logs: the page does not show
// them, and reading them after every step is work the run need not do.
type noLogs struct{ record.Source }

func (noLogs) ContainerLogPath(string) string { return "" }

// drain waits for the events queued to be written.
func (s *Server) drain() {
	s.qmu.Lock()
	q, d := s.queue, s.drained
	s.queue = nil
	s.qmu.Unlock()
	if q != nil {
		close(q)
		<-d
	}
}

// Finish writes the events queued, then the summary.
func (s *Server) Finish(sum report.Summary) error {
	s.drain()
	s.qmu.Lock()
	rec := s.rec
	s.qmu.Unlock()
	return rec.Finish(sum)
}

// Close ends the streams and stops the server (at most a second for the
// requests under way). Calling it again does nothing.
func (s *Server) Close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.drain()
		s.rec.Close()
		s.Hub.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.srv.Shutdown(ctx)
	})
}

// Handler serves the page (/), its script and style, and the event stream
// (/events). Nothing else exists, and only GET and HEAD are answered.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", s.page)
	mux.HandleFunc("/live.js", static("live.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("/live.css", static("live.css", "text/css; charset=utf-8"))
	mux.HandleFunc("/events", s.events)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: only GET", http.StatusMethodNotAllowed)
			return
		}
		if !s.remote && !loopbackHost(r.Host) {
			// A page bound to loopback answers only to a loopback name:
			// another site's name resolving here (DNS rebinding) gets nothing.
			http.Error(w, "this page answers on localhost only", http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// loopbackHost says whether a Host header names loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return loopback(host)
}

func static(name, ctype string) http.HandlerFunc {
	data, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(data)
	}
}

// page is the page's shell; the script fills it from the event stream.
func (s *Server) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pageTmpl().Execute(w, nil)
}

// Batch is how long a page's stream gathers lines after the first before
// it writes them: at most this much later on the page, far fewer wakeups.
const Batch = 25 * time.Millisecond

// writeTimeout bounds one write to a client: one that does not read is
// dropped rather than held.
const writeTimeout = 10 * time.Second

// events is the stream: "hello" (the page starts over), the history, a
// "lost" event when the history was cut, then each new line until the
// command ends or the client is dropped.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	c, history, lost, ok := s.Hub.join()
	if !ok {
		http.Error(w, "the live page has ended, or has too many viewers", http.StatusServiceUnavailable)
		return
	}
	defer s.Hub.leave(c)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := w.Write(b)
		return err == nil
	}
	// retry: how soon a dropped page reconnects (and resyncs).
	if !write(append([]byte("retry: 500\n"), helloEvent...)) {
		return
	}
	for _, m := range history {
		if !write(m) {
			return
		}
	}
	if lost > 0 && !write(fmt.Appendf(nil, "event: lost\ndata: {\"messages\":%d}\n\n", lost)) {
		return
	}
	if rc.Flush() != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case m, open := <-c.ch:
			if !open {
				return
			}
			if !write(m) {
				return
			}
			// What comes within Batch goes in the same write: a step's
			// lines come together, and a page woken once for them costs
			// the machine (and the run) less than once per line.
			t := time.NewTimer(Batch)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-t.C:
			}
			for more := true; more; {
				select {
				case m, open = <-c.ch:
					if !open {
						_ = rc.Flush()
						return
					}
					if !write(m) {
						return
					}
				default:
					more = false
				}
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}
