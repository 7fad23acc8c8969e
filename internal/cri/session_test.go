package cri

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestSession: sessions share the connection but not the history or the
// hooks: each records and reports only its own calls, also when they run
// at once, and closing a session leaves the connection to the others.
func TestSession(t *testing.T) {
	c := serve(t, &slowRuntime{delay: time.Millisecond, cancelled: make(chan string, 10)})
	a, b := c.Session(), c.Session()
	var mu sync.Mutex
	seen := map[*Client]int{}
	for _, s := range []*Client{a, b} {
		s.OnCall(func(Call) {
			mu.Lock()
			seen[s]++
			mu.Unlock()
		})
	}
	var wg sync.WaitGroup
	for i, s := range []*Client{a, b, a} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.StartContainer(context.Background(), "c"); err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if len(a.Calls()) != 2 || len(b.Calls()) != 1 || len(c.Calls()) != 0 {
		t.Errorf("calls: session a %d, b %d, parent %d; want 2, 1, 0", len(a.Calls()), len(b.Calls()), len(c.Calls()))
	}
	if seen[a] != 2 || seen[b] != 1 {
		t.Errorf("hooks: a saw %d, b %d; want 2, 1", seen[a], seen[b])
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.StartContainer(context.Background(), "c"); err != nil {
		t.Errorf("after closing a session, another's call: %v", err)
	}
}
