package cleanup

import (
	"fmt"
	"io"

	"github.com/podstep/podstep/internal/proxy"
	"github.com/podstep/podstep/internal/safe"
)

// CSISockets puts back the CSI drivers' sockets that `podstep proxy --csi`
// moved aside and did not put back (it was killed with SIGKILL, or the
// machine's power went, before a reboot cleared /run): each marker in dir
// (proxy.MarkerDir) whose proxy is gone is restored (proxy.Marker.Restore:
// the driver's socket back at its path, unless the driver made a new one
// there meanwhile). A marker whose proxy still runs is left alone. It
// writes a line for each and returns how many it could not put back.
func CSISockets(w io.Writer, dir string) (left int) {
	ms, err := proxy.Markers(dir)
	if err != nil {
		fmt.Fprintf(w, "✗ podstep proxy's CSI markers in %s: %v\n", dir, safe.Line(err.Error()))
		left++
	}
	for _, m := range ms {
		if m.Holder.Alive() {
			fmt.Fprintf(w, "  CSI driver %s's socket %s: podstep %s still stands in front of it; left alone\n", safe.Line(m.Driver), safe.Line(m.Socket), safe.Line(m.Holder.String()))
			continue
		}
		if err := m.Restore(); err != nil {
			fmt.Fprintf(w, "✗ CSI driver %s's socket %s: %s\n", safe.Line(m.Driver), safe.Line(m.Socket), safe.Line(err.Error()))
			left++
			continue
		}
		fmt.Fprintf(w, "✓ CSI driver %s: put its socket back at %s (moved aside by podstep proxy %s, which is gone)\n", safe.Line(m.Driver), safe.Line(m.Socket), safe.Line(m.Holder.String()))
	}
	return left
}
