package render

import (
	"fmt"
	"time"
)

// Duration prints a duration as step lines show it: 0.4ms, 12ms, 1.20s.
func Duration(d time.Duration) string {
	return Ms(float64(d) / float64(time.Millisecond))
}

// Ms prints milliseconds compactly: 0.4ms, 12ms, 1.20s.
func Ms(ms float64) string {
	switch {
	case ms < 10:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0fms", ms)
	default:
		return fmt.Sprintf("%.2fs", ms/1000)
	}
}
