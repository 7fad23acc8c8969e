package session

import (
	"fmt"
	"strings"
)

// ExitCodesDoc is docs/exit-codes.md, made from Codes.
func ExitCodesDoc() string {
	var b strings.Builder
	b.WriteString(`# Exit codes

<!-- Generated from internal/session (Codes): go test ./internal/session -run TestExitCodesDoc -update -->

Every podstep command (run, plan, replay, diff, bench, proxy, cleanup, info) ends with one of
these codes. The signal codes are 128+N, what a shell shows for a process a signal ended:
podstep exits with them after cleaning up (teardown, a partly written output file removed, the
TUI's terminal restored). A command that catches no signal (plan, diff, replay --auto, info) is
ended by it with the same code.

| code | meaning |
|---|---|
`)
	for _, c := range Codes {
		fmt.Fprintf(&b, "| %d | %s |\n", c.Code, strings.ReplaceAll(c.Meaning, "|", `\|`))
	}
	b.WriteString(`
When two apply to a run, the first in this order wins: 3, 4, the signal's, 1.
`)
	return b.String()
}
