package steps

import (
	"testing"
	"time"
)

func TestRelistsIn(t *testing.T) {
	for _, tc := range []struct {
		settle, poll time.Duration
		want         int
	}{
		{time.Second, 100 * time.Millisecond, 11},
		{time.Second, 300 * time.Millisecond, 5},
		{0, 100 * time.Millisecond, 1},
		{time.Second, 0, 1},
		{50 * time.Millisecond, 100 * time.Millisecond, 2},
	} {
		if got := relistsIn(tc.settle, tc.poll); got != tc.want {
			t.Errorf("relistsIn(%s, %s) = %d, want %d", tc.settle, tc.poll, got, tc.want)
		}
	}
}
