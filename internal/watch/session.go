package watch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fatih/color"

	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
)

// SessionOptions are one `podstep proxy` run's: whom to follow, how to
// show and hold the calls, and where to record.
type SessionOptions struct {
	Follow         string // "namespace/name", "" every pod
	Auto           bool   // print steps (Output); else the caller shows Pods in the TUI
	Output         string // report.Text, Short or JSON
	Hold           bool
	HoldStages     []steps.Stage
	RequestTimeout time.Duration
	// Runtime is the upstream runtime, as the start line says it.
	Runtime render.Runtime
	// Recorder, when not nil, records the first followed pod (--record
	// RecordPath); Header is its header (record.NewHeader), which the pod
	// completes.
	Recorder   *record.Recorder
	RecordPath string
	Header     record.Header
	// Page, when not nil, is the live page (--serve): it shows the newest
	// followed pod (see showOnPage).
	Page Page
	// RecordDir, when set, records every followed pod into its own file
	// in this folder (record.FileName), which appears once the pod's
	// sandbox is removed, the pod is forgotten, or the session closes
	// (record.CreateAtomic); Header is each one's header too.
	RecordDir string
	Stdout    io.Writer
	Stderr    io.Writer
	// MaxPods is the watcher's Options.MaxPods (--max-pods).
	MaxPods int
	// Specs is the watcher's Options.Specs (--kubeconfig, --manifest).
	Specs SpecSource
}

// Page is the live page (internal/live's Server): a recording's lines
// that it shows, Switch, to show another run from its start, and Note, a
// line of the page's own (the stuck-at view's and the PLEG notes' JSON
// lines), not recorded.
type Page interface {
	session.Teed
	Switch(h record.Header, src record.Source, rt render.Runtime, pod string) error
	Note(line []byte)
}

// Session is one `podstep proxy` run: the watcher, its frontends (a
// printer per followed pod in --auto, else Pods for the TUI) and the
// recording.
type Session struct {
	o        SessionOptions
	W        *Watcher
	Hold     *Hold     // nil without --hold
	Pods     chan *Pod // followed pods, for the TUI
	mu       sync.Mutex
	printers map[*Pod]*report.Printer
	recPod   *Pod
	pagePod  atomic.Pointer[Pod]       // the pod the live page shows
	recs     map[*Pod]*record.Recorder // --record-dir's, until finished
	seq      atomic.Uint64             // the calls of every server (CRI, CSI drivers), numbered as one
	plegLine atomic.Pointer[[]byte]    // the newest PLEG note's JSON line, for the page after a Switch
}

// NewSession makes the session and its watcher.
func NewSession(o SessionOptions) *Session {
	s := &Session{o: o, printers: map[*Pod]*report.Printer{}, recs: map[*Pod]*record.Recorder{}, Pods: make(chan *Pod, 1)}
	if o.Hold {
		s.Hold = NewHold(HoldOptions{Stages: o.HoldStages, RequestTimeout: o.RequestTimeout,
			Holding: s.holding, AutoReleased: s.autoReleased})
	}
	s.W = New(Options{Follow: o.Follow, Hold: s.Hold, OnPod: s.onPod, MaxPods: o.MaxPods, OnForget: s.onForget, OnRemoved: s.onRemoved,
		Specs: o.Specs, OnSpec: s.onSpec, RequestTimeout: o.RequestTimeout, OnStuck: s.onStuck, OnPLEG: s.onPLEG})
	return s
}

// Hooks are the watcher's proxy hooks, which also say the first call.
func (s *Session) Hooks() proxy.Hooks {
	hooks := s.W.Hooks()
	hooks.Seq = func() uint64 { return s.seq.Add(1) }
	arrived, first := hooks.Arrived, sync.Once{}
	hooks.Arrived = func(c *proxy.Call) {
		first.Do(func() { fmt.Fprintf(s.o.Stderr, "podstep: first call through the proxy: %s\n", c.Name()) })
		arrived(c)
	}
	return hooks
}

// onPod starts showing (and maybe recording) a followed pod.
func (s *Session) onPod(p *Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.o.Auto {
		select {
		case s.Pods <- p:
		default:
		}
	} else {
		pr := report.New(s.o.Stdout, s.o.Output)
		// The step lines of the pods followed interleave on stdout, and
		// none says whose it is: each has its pod whole, not a pod_delta
		// that a reader could not tell which pod to apply to.
		pr.SetFullPod(true)
		pr.Start(s.o.Runtime, p.Key())
		p.Subscribe(pr.Observe)
		s.printers[p] = pr
	}
	if s.o.Page != nil {
		s.showOnPage(p)
	}
	if s.o.Recorder != nil && s.recPod == nil {
		s.recPod = p
		h := s.o.Header
		h.Manifest = record.Manifest{File: "(a kubelet's pod, seen through podstep proxy)", Pod: p.Pod()}
		if err := s.o.Recorder.Start(h, p, s.o.Runtime, p.Key()); err != nil {
			fmt.Fprintf(s.o.Stderr, "podstep: --record %s: %v\n", s.o.RecordPath, err)
		}
		p.Subscribe(s.o.Recorder.Observe)
	}
	if s.o.RecordDir != "" {
		s.startRecording(p)
	}
}

// showOnPage makes the live page show p (s.mu held) when p is the first
// followed pod, or one whose sandbox the kubelet created while podstep
// watched (not one it joined late, from a node-level list): the page
// follows the newest pod the kubelet creates, and every open page starts
// over with it. The pod shown before stays followed (printed, recorded);
// only its page events stop. Pods are announced and their events
// delivered on one goroutine (Watcher.deliver), so no event of the pod
// shown before reaches the page after the switch.
func (s *Session) showOnPage(p *Pod) {
	prev := s.pagePod.Load()
	if prev != nil && p.Joined() {
		return
	}
	h := s.o.Header
	h.Manifest = record.Manifest{File: "(a kubelet's pod, seen through podstep proxy)", Pod: p.Pod()}
	var err error
	if prev == nil {
		err = s.o.Page.Start(h, p, s.o.Runtime, p.Key())
	} else {
		err = s.o.Page.Switch(h, p, s.o.Runtime, p.Key())
		// The pages started over: the node's PLEG banner, if one
		// stands, is the node's, not the pod's.
		if l := s.plegLine.Load(); l != nil && !bytes.Contains(*l, []byte(`"event":"relisted"`)) {
			s.o.Page.Note(*l)
		}
	}
	if err != nil {
		fmt.Fprintf(s.o.Stderr, "podstep: --serve: %s: %v\n", p.Key(), err)
	}
	s.pagePod.Store(p)
	p.Subscribe(func(ev steps.Event) {
		if s.pagePod.Load() == p {
			s.o.Page.Observe(ev)
		}
	})
}

// startRecording starts p's own recording in --record-dir (s.mu held).
func (s *Session) startRecording(p *Pod) {
	path := filepath.Join(s.o.RecordDir, record.FileName(p.Namespace, p.Name, p.UID))
	r, err := record.CreateAtomic(path)
	if err == nil {
		h := s.o.Header
		h.Manifest = record.Manifest{File: "(a kubelet's pod, seen through podstep proxy)", Pod: p.Pod()}
		err = r.Start(h, p, s.o.Runtime, p.Key())
	}
	if err != nil {
		fmt.Fprintf(s.o.Stderr, "podstep: --record-dir: %s: %v\n", p.Key(), err)
		if r != nil {
			r.Close()
		}
		return
	}
	s.recs[p] = r
	p.Subscribe(r.Observe)
}

// endRecording finishes p's recording in --record-dir, if any (s.mu held):
// it appears in the folder now.
func (s *Session) endRecording(p *Pod, sum report.Summary) {
	r := s.recs[p]
	if r == nil {
		return
	}
	delete(s.recs, p)
	if err := r.Finish(sum); err != nil {
		fmt.Fprintf(s.o.Stderr, "podstep: --record-dir: %s: %v\n", p.Key(), err)
	}
}

// onRemoved ends a removed pod's recording in --record-dir.
func (s *Session) onRemoved(p *Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recs[p] != nil {
		s.endRecording(p, p.Summary())
	}
}

// onSpec says where a followed pod's spec came from, or warns, once per
// pod, that there is none and its init containers are inferred.
func (s *Session) onSpec(p *Pod, n SpecNote) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.Err != nil {
		fmt.Fprintf(s.o.Stderr, "podstep: warning: pod %s: no spec (%v); its init containers are inferred, as without --kubeconfig/--manifest\n",
			p.Key(), n.Err)
	} else {
		fmt.Fprintf(s.o.Stderr, "podstep: pod %s (uid %s): spec from %s\n", p.Key(), p.UID, n.From)
	}
	if s.o.Auto && s.o.Output == report.JSON {
		line := map[string]any{"type": "spec", "pod": p.Key(), "uid": p.UID, "from": n.From}
		if n.Err != nil {
			line["error"] = n.Err.Error()
		}
		_, _ = s.o.Stdout.Write(jsonLine(line)) // unchecked, as the step lines
	}
}

// onForget ends what is kept of a pod the watcher forgot (MaxPods): its
// summary is printed and its recording ended now.
func (s *Session) onForget(p *Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := p.Summary()
	if pr := s.printers[p]; pr != nil {
		pr.Finish(sum)
		delete(s.printers, p)
	}
	if p == s.pagePod.Load() {
		_ = s.o.Page.Finish(sum)
	}
	s.endRecording(p, sum)
	if p == s.recPod {
		if err := s.o.Recorder.Finish(sum); err != nil {
			_, _ = fmt.Fprintf(s.o.Stderr, "podstep: --record %s: %v\n", s.o.RecordPath, err)
		}
	}
}

// Close lets every held call go (the kubelet's calls go on before podstep
// leaves) and stops the watcher; the proxy server is stopped in between
// (stop).
func (s *Session) Close(stop func()) {
	if s.Hold != nil {
		s.Hold.Close()
	}
	stop()
	s.W.Close()
	s.finish()
}

// finish prints each followed pod's summary and the node-level polling,
// and ends the recording.
func (s *Session) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	polling := s.W.Polling()
	for _, p := range s.W.Pods() {
		sum := p.Summary()
		if pr := s.printers[p]; pr != nil {
			pr.Finish(sum)
		}
		if p == s.pagePod.Load() {
			_ = s.o.Page.Finish(sum)
		}
		s.endRecording(p, sum)
		if p == s.recPod {
			if err := s.o.Recorder.Finish(sum); err != nil {
				fmt.Fprintf(s.o.Stderr, "podstep: --record %s: %v\n", s.o.RecordPath, err)
			}
		}
	}
	if s.o.Recorder != nil && s.recPod == nil {
		s.o.Recorder.Close()
		fmt.Fprintf(s.o.Stderr, "podstep: --record %s: no pod was seen; the file is empty\n", s.o.RecordPath)
	}
	if !s.o.Auto {
		return
	}
	if s.o.Output == report.JSON {
		_, _ = s.o.Stdout.Write(jsonLine(map[string]any{"type": "polling", "calls": polling})) // unchecked, as the Fprintf below
		return
	}
	p := FormatPolling(polling)
	if p == "" {
		p = "none"
	}
	fmt.Fprintf(s.o.Stdout, "node-level polling (not shown step by step): %s\n", p)
}

// onStuck says a stuck-at note: in --auto a line of text or a JSON
// object {"type":"stuck",...} (docs/proxy.md), and on the live page when
// the page shows the pod.
func (s *Session) onStuck(p *Pod, n StuckNote) {
	var line []byte
	if s.o.Auto && s.o.Output == report.JSON || s.o.Page != nil && s.pagePod.Load() == p {
		line = jsonLine(stuckLine{Type: "stuck", StuckNote: n})
	}
	if s.o.Page != nil && s.pagePod.Load() == p {
		s.o.Page.Note(line)
	}
	c := color.New(color.FgYellow, color.Bold)
	if n.Event == "answered" || n.Event == "clear" {
		c = color.New(color.Faint)
	}
	s.printNote(line, n.Line(), c)
}

// onPLEG says a note on the kubelet's relists: under --auto a line of
// text, or a JSON line of type "pleg"; on the live page that JSON line
// (a node-wide banner, which "relisted" takes down), given again to the
// pages after each Switch while it stands.
func (s *Session) onPLEG(n PLEGNote) {
	line := jsonLine(plegLine{Type: "pleg", PLEGNote: n})
	if s.o.Page != nil {
		s.plegLine.Store(&line)
		s.o.Page.Note(line)
	}
	c := color.New(color.FgYellow, color.Bold)
	switch n.Event {
	case "unhealthy":
		c = color.New(color.FgRed, color.Bold)
	case "relisted":
		c = color.New(color.Faint)
	}
	s.printNote(line, n.Line(), c)
}

// printNote prints a note under --auto (nothing otherwise): its JSON line
// under -o json, else its text ("" for none) with the word before the
// first colon in c.
func (s *Session) printNote(line []byte, text string, c *color.Color) {
	if !s.o.Auto {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.Output == report.JSON {
		_, _ = s.o.Stdout.Write(line) // unchecked, as the step lines
		return
	}
	if text == "" {
		return
	}
	word, rest, _ := strings.Cut(text, ":")
	fmt.Fprintf(s.o.Stdout, "%s%s\n", c.Sprint(word+":"), rest)
}

// plegLine is a PLEG note as a JSON line.
type plegLine struct {
	Type string `json:"type"`
	PLEGNote
}

// stuckLine is a stuck-at note as a JSON line.
type stuckLine struct {
	Type string `json:"type"`
	StuckNote
}

// holding says, in --auto, that a call is held and how to let it go.
func (s *Session) holding(h Held) {
	if !s.o.Auto {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.Output == report.JSON {
		// Unchecked, as the text lines' fmt.Fprintf: a reader that went away
		// does not stop the proxy.
		_, _ = s.o.Stdout.Write(jsonLine(map[string]any{"type": "held", "pod": h.Pod.Key(), "method": h.Call.Name(), "step": h.Step,
			"stage": h.Stage, "deadline": h.Deadline, "release_at": h.ReleaseAt}))
		return
	}
	fmt.Fprintf(s.o.Stdout, "%s %s (step %s, stage %s) of %s: the kubelet gives up in %s; podstep lets it go by itself in %s. Enter: let it go, c: continue\n",
		color.New(color.FgYellow, color.Bold).Sprint("held:"), h.Call.Name(), h.Step, h.Stage, h.Pod.Key(),
		time.Until(h.Deadline).Round(time.Second), time.Until(h.ReleaseAt).Round(time.Second))
}

// autoReleased warns that a held call went by itself.
func (s *Session) autoReleased(h Held) {
	fmt.Fprintf(s.o.Stderr, "podstep: warning: let %s of %s go by itself %s before the kubelet's deadline (it would have timed out)\n",
		h.Call.Name(), h.Pod.Key(), time.Until(h.Deadline).Round(time.Second))
}

// ReadReleases lets held calls go from in's lines in --auto: an empty
// line (or n) the oldest, c all of them and the rest of their stage.
func (s *Session) ReadReleases(ctx context.Context, in io.Reader) {
	sc := bufio.NewScanner(in)
	for sc.Scan() && ctx.Err() == nil {
		switch strings.TrimSpace(sc.Text()) {
		case "", "n":
			s.Hold.Release()
		case "c":
			s.Hold.Continue()
		}
	}
}

// jsonLine is v as one JSON line.
func jsonLine(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "error": err.Error()})
	}
	return append(b, '\n')
}

// Runtime is the upstream runtime, as the session shows it.
func (s *Session) Runtime() render.Runtime { return s.o.Runtime }

// Stderr is where the session writes its messages.
func (s *Session) Stderr() io.Writer { return s.o.Stderr }
