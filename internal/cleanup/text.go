package cleanup

import (
	"fmt"
	"io"
)

// Write is `podstep cleanup`'s text: a line per sandbox (and what was
// kept), or that there was nothing to clean on endpoint. It returns how
// many pods were not fully removed.
func Write(w io.Writer, endpoint string, done []Sandbox) (left int) {
	if len(done) == 0 {
		fmt.Fprintf(w, "nothing to clean on %s\n", endpoint)
		return 0
	}
	for _, d := range done {
		if d.Err != nil {
			left++
			fmt.Fprintf(w, "✗ pod %s sandbox %.13s: %v\n", d.Pod, d.SandboxID, d.Err)
		} else {
			fmt.Fprintf(w, "✓ pod %s: removed sandbox %.13s, %d container(s), %d dir(s)\n", d.Pod, d.SandboxID, d.Containers, len(d.Dirs))
		}
		for _, k := range d.Kept {
			fmt.Fprintf(w, "  kept: %s\n", k)
		}
		if d.Err == nil && len(d.Kept) > 0 {
			left++
		}
	}
	return left
}
