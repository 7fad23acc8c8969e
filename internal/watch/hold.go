package watch

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/steps"
)

// HoldOptions configure a Hold.
type HoldOptions struct {
	// Stages are the stages whose calls are held; none: every call of the
	// followed pod.
	Stages []steps.Stage
	// RequestTimeout is the kubelet's runtimeRequestTimeout (2m by
	// default): the deadline of a call that carries none.
	RequestTimeout time.Duration
	// Margin is how long before the call's deadline a held call is let go
	// by itself, so that the kubelet never times out because of podstep;
	// 0: 5 s (or a tenth of the time left, when that is shorter).
	Margin time.Duration
	// Changed is called (on the call's goroutine) when a call is held or
	// let go; Holding when a call is held; AutoReleased when one was let go
	// because its deadline came near.
	Changed      func()
	Holding      func(Held)
	AutoReleased func(Held)
}

// Hold keeps a followed pod's calls from going upstream until released:
// breakpoints on a real kubelet (`podstep proxy --hold`).
type Hold struct {
	opts HoldOptions

	mu     sync.Mutex
	stages map[steps.Stage]bool
	held   []*held
	skip   steps.Stage // Continue: let the rest of this stage go
	closed bool
}

// Held is one call waiting at the hold.
type Held struct {
	Call *proxy.Call
	// Request is the call's request, decoded and redacted (nil when podstep
	// cannot decode it).
	Request proto.Message
	Pod     *Pod
	Stage   steps.Stage
	Step    string
	// Since is when it was held; Deadline when the kubelet gives up on it;
	// ReleaseAt when podstep lets it go by itself.
	Since, Deadline, ReleaseAt time.Time
	// Auto is true when it went because its deadline came near.
	Auto bool
}

// held is a Held and how to let it go.
type held struct {
	Held
	release chan struct{}
	once    sync.Once
}

// NewHold returns a hold.
func NewHold(o HoldOptions) *Hold {
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 2 * time.Minute
	}
	h := &Hold{opts: o, stages: map[steps.Stage]bool{}}
	for _, s := range o.Stages {
		h.stages[s] = true
	}
	return h
}

func (x *held) let() { x.once.Do(func() { close(x.release) }) }

// holds says whether a call of stage is held (h.mu held).
func (h *Hold) holds(stage steps.Stage) bool {
	if h.closed {
		return false
	}
	if h.skip != "" {
		if stage == h.skip {
			return false
		}
		h.skip = ""
	}
	return len(h.stages) == 0 || h.stages[stage]
}

// wait holds c until it is released, its deadline comes near, or its
// caller gives up.
func (h *Hold) wait(ctx context.Context, c *proxy.Call, req proto.Message, pod *Pod, stage steps.Stage, step string) {
	h.mu.Lock()
	if !h.holds(stage) {
		h.mu.Unlock()
		return
	}
	now := time.Now()
	x := &held{Held: Held{Call: c, Request: req, Pod: pod, Stage: stage, Step: step, Since: now, Deadline: c.Deadline}, release: make(chan struct{})}
	if x.Deadline.IsZero() {
		x.Deadline = c.Arrived.Add(h.opts.RequestTimeout)
	}
	margin := h.opts.Margin
	if margin == 0 {
		margin = 5 * time.Second
		if left := x.Deadline.Sub(now) / 10; left < margin {
			margin = left
		}
	}
	x.ReleaseAt = x.Deadline.Add(-margin)
	h.held = append(h.held, x)
	h.mu.Unlock()
	pod.poke()
	if h.opts.Holding != nil {
		h.opts.Holding(x.Held)
	}
	h.changed()

	t := time.NewTimer(time.Until(x.ReleaseAt))
	defer t.Stop()
	select {
	case <-x.release:
	case <-ctx.Done():
	case <-t.C:
		x.Auto = true
		if h.opts.AutoReleased != nil {
			h.opts.AutoReleased(x.Held)
		}
	}
	h.mu.Lock()
	for i, y := range h.held {
		if y == x {
			h.held = append(h.held[:i:i], h.held[i+1:]...)
			break
		}
	}
	h.mu.Unlock()
	pod.poke()
	h.changed()
}

func (h *Hold) changed() {
	if h.opts.Changed != nil {
		h.opts.Changed()
	}
}

// Held lists the calls held now, oldest first.
func (h *Hold) Held() []Held {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Held, 0, len(h.held))
	for _, x := range h.held {
		out = append(out, x.Held)
	}
	return out
}

// Release lets the oldest held call go; false when none was held.
func (h *Hold) Release() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.held) == 0 {
		return false
	}
	h.held[0].let()
	return true
}

// Continue lets every held call go, and the rest of their stage: the next
// call held is one of another stage.
func (h *Hold) Continue() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range h.held {
		if h.skip == "" {
			h.skip = x.Stage
		}
		x.let()
	}
}

// ToggleStage adds or removes stage from the held stages and says whether
// it is held now.
func (h *Hold) ToggleStage(stage steps.Stage) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stages[stage] {
		delete(h.stages, stage)
		return false
	}
	h.stages[stage] = true
	return true
}

// Close lets every held call go and holds no more: on exit (Ctrl-C,
// SIGTERM, a closed terminal), nothing stays held.
func (h *Hold) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, x := range h.held {
		x.let()
	}
}
