package watch

import (
	"sync"
	"sync/atomic"

	"github.com/podstep/podstep/internal/steps"
)

// subscribers are a pod's event subscriptions, delivered to as a
// steps.Engine delivers its own: every event to every subscriber, in
// order, one at a time (the watcher's deliver serialises them).
type subscribers struct {
	mu   sync.Mutex
	list []*subscriber // replaced, never changed in place
}

type subscriber struct {
	fn        func(steps.Event)
	cancelled atomic.Bool
}

// Subscribe calls fn with every event of the pod from now on, until cancel.
// fn must not block; it may read the pod.
func (p *Pod) Subscribe(fn func(steps.Event)) (cancel func()) {
	s := &subscriber{fn: fn}
	p.subs.mu.Lock()
	p.subs.list = append(append([]*subscriber(nil), p.subs.list...), s)
	p.subs.mu.Unlock()
	return func() {
		s.cancelled.Store(true)
		p.subs.mu.Lock()
		defer p.subs.mu.Unlock()
		var keep []*subscriber
		for _, x := range p.subs.list {
			if x != s {
				keep = append(keep, x)
			}
		}
		p.subs.list = keep
	}
}

func (s *subscribers) emit(ev steps.Event) {
	s.mu.Lock()
	list := s.list
	s.mu.Unlock()
	for _, x := range list {
		if !x.cancelled.Load() {
			x.fn(ev)
		}
	}
}
