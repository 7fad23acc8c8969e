package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestRunPods(t *testing.T) {
	tests := []struct {
		name    string
		n, k    int
		stopAt  int // index whose run says stop (0: none)
		cancel  bool
		wantMin int
		wantMax int
	}{
		{"one at a time", 5, 1, 0, false, 5, 5},
		{"four at once", 10, 4, 0, false, 10, 10},
		{"more workers than pods", 3, 16, 0, false, 3, 3},
		{"a failure stops new pods", 10, 1, 3, false, 3, 3},
		// Pods handed out before the stop is seen still run, but not all 20.
		{"a failure with 2 at once stops new pods", 20, 2, 3, false, 3, 19},
		{"cancelled: nothing starts", 10, 2, 0, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			var mu sync.Mutex
			inFlight, most := 0, 0
			pods := RunPods(ctx, tt.n, tt.k, 1, func(i int) (Pod, bool) {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				inFlight--
				mu.Unlock()
				return Pod{Name: fmt.Sprint(i)}, i == tt.stopAt
			})
			if len(pods) < tt.wantMin || len(pods) > tt.wantMax {
				t.Fatalf("%d pods, want %d to %d", len(pods), tt.wantMin, tt.wantMax)
			}
			for j, p := range pods {
				if p.Name != fmt.Sprint(j+1) {
					t.Errorf("pod %d is %q: want the indexes from 1, in order", j, p.Name)
				}
			}
			if most > tt.k {
				t.Errorf("%d pods at once, want at most %d", most, tt.k)
			}
			if tt.k > 1 && tt.n >= tt.k && tt.stopAt == 0 && !tt.cancel && most < 2 {
				t.Errorf("never more than one pod at once with k=%d", tt.k)
			}
		})
	}
}
