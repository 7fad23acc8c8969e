package diff

import (
	"fmt"
	"strings"
	"testing"
)

// TestMaxCalls: a trace of more than MaxCalls calls is refused with the
// bound (the alignment's time grows with the product of the sides);
// MaxCalls itself is read.
func TestMaxCalls(t *testing.T) {
	trace := func(n int) string {
		var b strings.Builder
		b.WriteString("# x: CREATE phase (t0 = test)\n# t0 (relative times) = epoch 1795272396.928226\n")
		for i := range n {
			fmt.Fprintf(&b, "+ %d.0ms  [    0.60ms] Version  req.version=0.1.0 -> containerd 1.6.20~ds1 api=v1\n", i)
		}
		return b.String()
	}
	if _, err := ReadTrace("ok", strings.NewReader(trace(MaxCalls))); err != nil {
		t.Errorf("%d calls: %v", MaxCalls, err)
	}
	_, err := ReadTrace("big", strings.NewReader(trace(MaxCalls+1)))
	if want := fmt.Sprintf("big: more than %d CRI calls", MaxCalls); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%d calls: %v, want %q", MaxCalls+1, err, want)
	}
}

// TestTraceDurations: a trace call line whose offset or duration is beyond
// time.Duration's range is refused with its line (issue 34: an overflowed
// duration printed as "-9223372036854.78s").
func TestTraceDurations(t *testing.T) {
	head := "# x: CREATE phase (t0 = test)\n# t0 (relative times) = epoch 1795272396.928226\n"
	for _, tc := range []struct{ name, line, want string }{
		{"duration", "+ 1.0ms  [99999999999999999999.0ms] Version  req.version=0.1.0 -> containerd 1.6.20~ds1 api=v1\n", "huge: line 3: offset 1.0ms, duration 99999999999999999999.0ms: expected at most 9223372036854 ms each"},
		{"offset", "+ 99999999999999999999.0ms  [1.0ms] Version  req.version=0.1.0 -> containerd 1.6.20~ds1 api=v1\n", "huge: line 3: offset 99999999999999999999.0ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadTrace("huge", strings.NewReader(head+tc.line))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}
