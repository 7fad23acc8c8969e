package session

import (
	"context"
	"io"

	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// End ends a run the same way for --auto and the TUI: Settle, then the
// cluster's view of the pod (ClusterView; its error is the run's when
// nothing else failed), then the printer's summary and the recording's
// end. It returns the exit code and the line for stderr ("" for none).
func (o *Options) End(ctx context.Context, eng *steps.Engine, sum *report.Summary, teardown, interrupted bool,
	printer *report.Printer, rec *Recording, stderr io.Writer) (int, string) {
	code, msg := Settle(ctx, eng, sum, teardown, interrupted, stderr)
	var viewErr error
	if sum.Cluster, viewErr = o.ClusterView(ctx, eng); viewErr != nil && code == ExitOK {
		code, msg = Code(viewErr), "error: "+viewErr.Error()
	}
	printer.Finish(*sum)
	rec.Finish(*sum, stderr)
	return code, msg
}
