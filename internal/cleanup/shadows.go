package cleanup

import (
	"context"
	"fmt"

	"github.com/podstep/podstep/internal/shadow"
)

// Shadows removes the shadow runtimes under base whose podstep has ended
// (shadow.Leftovers: a run killed before it could stop its shadow, or one
// kept with --keep): their sandboxes, process, shims, mounts, bridge,
// iptables rules and dir (shadow.Remove). A shadow whose podstep still
// runs is that run's: not touched.
func Shadows(ctx context.Context, base string) []Dir {
	var out []Dir
	for _, l := range shadow.Leftovers(base) {
		if err := shadow.Remove(ctx, l); err != nil {
			out = append(out, Dir{Path: l.Dir, Why: "shadow runtime not fully removed: " + err.Error()})
			continue
		}
		out = append(out, Dir{Path: l.Dir, Removed: true, Why: fmt.Sprintf("shadow runtime of %s (%s, network %s) left by podstep %s, which has ended",
			l.Marker.Node, l.Marker.Version, l.Marker.Network.Name, l.Marker.Holder.String())})
	}
	return out
}
