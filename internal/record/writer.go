package record

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// Source is what the recorder reads from the engine besides its events:
// the plan, the pod, the container log files and the redactor.
// *steps.Engine is one.
type Source interface {
	Steps() []steps.Step
	Pod() *corev1.Pod
	ContainerLogPath(name string) string
	Redactor() *cri.Redactor
}

var _ Source = (*steps.Engine)(nil)

// Recorder writes a recording as a run goes: Start writes the header, the
// start line and the plan; Observe, an engine observer, writes each event;
// Finish writes the summary and closes. Every line reaches the file when
// it is written (and the gzip stream is flushed), so a run that is killed
// leaves a readable prefix. A write error is kept and returned by Finish
// (or Err); the run goes on without the recording.
type Recorder struct {
	mu      sync.Mutex
	closer  io.Closer // the file, nil for New
	gz      *gzip.Writer
	bw      *bufio.Writer
	printer *report.Printer // the start, step and summary lines: -o json's own
	steps   report.StepBuilder
	calls   map[int]report.CallJSON // the running step's calls, by Seq, as their call lines have them
	src     Source
	red     *cri.Redactor
	now     func() time.Time

	plan    []planKey   // keys of the plan as last written
	running int         // the running step's ID
	timer   *time.Timer // the flush flushSoon armed
	logs    map[string]*logTail
	logScan time.Time // when readLogs last read every container's log
	started bool
	closed  bool
	err     error
}

// Create creates the recording file path; a name ending in ".gz" is
// written gzip-compressed. Nothing is written before Start. A path that
// is a link, a FIFO or a device is refused unless force (outfile.Open);
// the file is written as the run goes, so a killed run leaves what it had
// recorded (replay reads it up to the cut).
func Create(path string, force bool) (*Recorder, error) {
	f, err := outfile.Open(path, force)
	if err != nil {
		return nil, fmt.Errorf("create recording: %w", err)
	}
	r := New(f, strings.HasSuffix(path, ".gz"))
	r.closer = f
	return r, nil
}

// New returns a recorder writing to w, gzip-compressed if compress.
func New(w io.Writer, compress bool) *Recorder {
	r := &Recorder{now: time.Now, logs: map[string]*logTail{}, calls: map[int]report.CallJSON{}}
	r.steps.Call = r.callJSON
	if compress {
		r.gz = gzip.NewWriter(w)
		w = r.gz
	}
	r.bw = bufio.NewWriterSize(w, 64<<10)
	r.printer = report.New(r.bw, "json")
	return r
}

// Start writes the header (Type, Format, Version and Recorded are filled
// in when empty), the start line `-o json` prints, and the plan. src is the
// engine being recorded.
func (r *Recorder) Start(h Header, src Source, rt render.Runtime, pod string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("recording already started")
	}
	r.started = true
	r.src, r.red = src, src.Redactor()
	h.Type, h.Format, h.Version = TypeHeader, Format, Version
	if h.Recorded.IsZero() {
		h.Recorded = r.now()
	}
	r.line(h)
	r.printer.Start(rt, pod)
	r.checkPlan()
	r.flush()
	return r.err
}

// Observe is an engine observer: it writes the event's lines.
func (r *Recorder) Observe(ev steps.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.closed {
		return
	}
	switch ev.Kind {
	case steps.StepStarted:
		// A retry or the teardown changed the plan since the last step.
		r.checkPlan()
		r.running = ev.Step.ID
		r.line(StepStarted{Type: TypeStepStarted, ID: ev.Step.ID, Name: ev.Step.Name, Started: ev.Step.Started,
			Requests: report.Requests(ev.Step.Requests)})
	case steps.CallSent:
		r.line(CallSent{Type: TypeCallSent, Step: r.running, Method: ev.Method, Time: r.now()})
	case steps.CallDone:
		if ev.Call != nil {
			c := report.CallToJSON(*ev.Call)
			r.calls[ev.Call.Seq] = c
			r.line(Call{Type: TypeCall, Step: r.running, CallJSON: c})
		}
	case steps.StepDone:
		r.printer.Step(r.steps.Step(ev))
		clear(r.calls)
		r.readLogs(&ev.Step)
		// A restart inserted steps, or a failure skipped the rest.
		r.checkPlan()
	}
	// Each step is flushed as it ends. A step that takes longer (a slow
	// call, a wait) is flushed flushDelay after it began or sent a call,
	// so that a run killed then still shows what was in flight. Not a
	// flush per line: with gzip each is a compressed block of its own.
	if ev.Kind == steps.StepDone {
		r.flush()
	} else {
		r.flushSoon()
	}
}

// flushDelay is how long a line of a step still running may wait in the
// buffer.
const flushDelay = 100 * time.Millisecond

// flushSoon arms a flush in flushDelay, unless one is armed.
func (r *Recorder) flushSoon() {
	if r.timer != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(flushDelay, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.timer == t {
			r.timer = nil
		}
		if !r.closed {
			r.flush()
		}
	})
	r.timer = t
}

// Finish writes the summary line `-o json` prints and closes the recording.
func (r *Recorder) Finish(s report.Summary) error {
	r.mu.Lock()
	if r.started && !r.closed {
		r.printer.Finish(s)
	}
	r.mu.Unlock()
	return r.Close()
}

// Close ends the recording (without a summary unless Finish wrote it):
// it flushes, ends the gzip stream and closes the file. Calling it again
// does nothing.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.err
	}
	r.closed = true
	r.flush()
	if r.gz != nil {
		r.keep(r.gz.Close())
	}
	if r.closer != nil {
		r.keep(r.closer.Close())
	}
	return r.err
}

// Err returns the first write error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// callJSON is a call as its call line had it (converted once).
func (r *Recorder) callJSON(c cri.Call) report.CallJSON {
	if j, ok := r.calls[c.Seq]; ok {
		return j
	}
	return report.CallToJSON(c)
}

// line writes v as one JSON line.
func (r *Recorder) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		r.keep(fmt.Errorf("encode %T: %w", v, err))
		return
	}
	_, err = r.bw.Write(append(b, '\n'))
	r.keep(err)
}

// flush pushes what was written to the file.
func (r *Recorder) flush() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.keep(r.bw.Flush())
	if r.gz != nil {
		r.keep(r.gz.Flush())
	}
}

func (r *Recorder) keep(err error) {
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("write recording: %w", err)
	}
}
