package tui

import (
	"os"
	"testing"
	"time"
)

// TestMain shows every time in frames in UTC (the pod pane's "running
// since" is decoded in Local). It is set once, before any test starts a
// goroutine: a test that swapped time.Local itself raced with the gRPC
// goroutines an earlier test's simulated runtime left winding down.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}
