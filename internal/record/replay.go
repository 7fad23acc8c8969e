package record

import (
	"errors"
	"fmt"
	"io"

	"github.com/podstep/podstep/internal/report"
)

// Banner is the line `podstep replay --auto` says first about the
// recording named path: when, where, by which podstep, against which runtime.
func (h Header) Banner(path string) string {
	rt := h.Runtime.Endpoint
	if h.Runtime.Name != "" {
		rt = fmt.Sprintf("%s %s at %s", h.Runtime.Name, h.Runtime.Version, rt)
	}
	if h.Runtime.Simulated {
		rt = "the SIMULATED runtime at " + h.Runtime.Endpoint
	}
	return fmt.Sprintf("podstep: REPLAY of %s: recorded %s on %s with podstep %s, %s (format v%d)",
		path, h.Recorded.Format("2006-01-02 15:04:05 MST"), h.Host, h.Podstep, rt, h.Version)
}

// Print prints the rest of the recording through p, as the run printed
// it: the start line, each step and the summary. A damaged recording is
// printed up to the damage, then its error. A version 1 recording has the
// whole pod on every step line, and so has its JSON replay (SetFullPod):
// its lines come out as recorded, byte for byte.
func (r *Reader) Print(p *report.Printer) error {
	if r.header.Version < 2 {
		p.SetFullPod(true)
	}
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case ev.Start != nil:
			p.Start(ev.Start.Runtime, ev.Start.Pod)
		case ev.Step != nil:
			p.Step(*ev.Step)
		case ev.Summary != nil:
			p.Finish(*ev.Summary)
		}
	}
}
