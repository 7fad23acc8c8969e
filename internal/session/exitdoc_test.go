package session

import (
	"testing"

	"github.com/podstep/podstep/internal/golden"
)

// TestExitCodesDoc: docs/exit-codes.md is the table Codes (-update writes it).
func TestExitCodesDoc(t *testing.T) {
	golden.Check(t, "../../docs/exit-codes.md", ExitCodesDoc())
}

// TestExitCodesListed: every exit code constant is in the table once.
func TestExitCodesListed(t *testing.T) {
	seen := map[int]int{}
	for _, c := range Codes {
		seen[c.Code]++
	}
	for _, c := range []int{ExitOK, ExitPodFailed, ExitUsage, ExitRuntime, ExitLeftBehind, ExitSIGHUP, ExitInterrupted, ExitSIGTERM} {
		if seen[c] != 1 {
			t.Errorf("exit code %d is in the table %d times", c, seen[c])
		}
	}
}
