package watch

import "sync"

// serial runs functions one at a time, in the order they were queued, on
// a goroutine of its own: the watcher's work on a call (decoding,
// redaction, attribution, the frontends' delivery) leaves the call's path
// and keeps the order the calls arrived and were answered in, which is
// all the watcher's state depends on.
type serial struct {
	mu      sync.Mutex
	q       []func()
	wake    chan struct{}
	stopped bool
	exited  chan struct{}
}

func newSerial() *serial {
	s := &serial{wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go s.run()
	return s
}

// do queues fn; once stopped, it runs fn in the caller instead.
func (s *serial) do(fn func()) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.exited // what was queued before runs first
		fn()
		return
	}
	s.q = append(s.q, fn)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *serial) run() {
	defer close(s.exited)
	for range s.wake {
		for {
			s.mu.Lock()
			q := s.q
			s.q = nil
			stopped := s.stopped
			s.mu.Unlock()
			for _, fn := range q {
				fn()
			}
			if len(q) == 0 {
				if stopped {
					return
				}
				break
			}
		}
	}
}

// flush returns once everything queued before it has run. It must not be
// called from a queued function.
func (s *serial) flush() {
	done := make(chan struct{})
	s.do(func() { close(done) })
	<-done
}

// stop runs what is queued, then runs every later function in its caller.
func (s *serial) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.exited
}
