package predict

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/podstep/podstep/internal/replay"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/scenario"
)

// recorded is the scenario a recording's manifest is: "scenario:NAME", or
// a file of the catalogue's directory (testdata/scenarios before it moved).
func recorded(file string) *scenario.Scenario {
	name, ok := strings.CutPrefix(file, "scenario:")
	if dir := path.Dir(file); !ok && (strings.HasSuffix(dir, "scenario/data") || strings.HasSuffix(dir, "testdata/scenarios")) {
		name, ok = strings.CutSuffix(path.Base(file), ".yaml")
	}
	if sc, err := scenario.Get(name); ok && err == nil {
		return &sc
	}
	return nil
}

// Replay is replay --predict: the recording read from r, stepped through
// with a question before each step, printed by printer as replay --auto
// prints it. A recording of a built-in scenario (its manifest file is
// "scenario:NAME") brings the scenario's lesson.
func Replay(ctx context.Context, r io.Reader, printer *report.Printer, o Options) error {
	p, err := replay.Load(r)
	if err != nil {
		return err
	}
	defer p.Close()
	if o.Scenario == nil {
		o.Scenario = recorded(p.Header().Manifest.File)
	}
	p.Subscribe(printer.Observe)
	if err := Run(ctx, p, New(o), func() string { return p.PodState().Display }); err != nil {
		return err
	}
	if err := p.Damage(); err != nil {
		return fmt.Errorf("the recording is damaged: %w", err)
	}
	if sum := p.Summary(); sum != nil {
		printer.Finish(*sum)
	}
	return nil
}
