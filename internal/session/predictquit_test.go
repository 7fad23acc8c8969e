package session

import "testing"

// TestQuitInterrupts: quitting predict mode before the run's end is an
// interrupted run (exit 130), as ctrl+c is; quitting a plain TUI run, or
// predict mode once the run ended, is not.
func TestQuitInterrupts(t *testing.T) {
	for _, tc := range []struct {
		predict, finished, interrupted, want bool
	}{
		{true, false, false, true}, // q mid-crashloop in predict mode
		{true, true, false, false}, // q after the last step
		{false, false, false, false},
		{false, false, true, true}, // ctrl+c
		{true, true, true, true},
	} {
		if got := QuitInterrupts(tc.predict, tc.finished, tc.interrupted); got != tc.want {
			t.Errorf("QuitInterrupts(predict %v, finished %v, interrupted %v) = %v, want %v", tc.predict, tc.finished, tc.interrupted, got, tc.want)
		}
	}
}
