package cleanup

import (
	"context"
	"fmt"
	"time"

	"github.com/podstep/podstep/internal/shadow"
)

// Shadows removes the shadow runtimes under base whose podstep has ended
// (shadow.Leftovers: a run killed before it could stop its shadow, or one
// kept with --keep): their sandboxes, process, shims, mounts, bridge,
// iptables rules and dir (shadow.Remove). A shadow whose podstep still
// runs is that run's: not touched. Then the shadows' image caches beside
// base (shadow.CacheBase): the node's images unpacked for the next shadow,
// kept between runs; cleanup leaves nothing of podstep's, so they go too
// (the next shadow starts cold).
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
	for _, c := range shadow.Caches(shadow.CacheBase(base)) {
		if err := shadow.RemoveCache(c.Dir); err != nil {
			out = append(out, Dir{Path: c.Dir, Why: "shadow image cache not removed: " + err.Error()})
			continue
		}
		out = append(out, Dir{Path: c.Dir, Removed: true, Why: fmt.Sprintf("image cache of shadow runtimes (%d MB: a node runtime's images, unpacked, kept for the next shadow; last used %s)",
			(c.Bytes+1<<19)>>20, c.Used.UTC().Format(time.RFC3339))})
	}
	return out
}
