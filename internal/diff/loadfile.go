package diff

import (
	"bytes"

	"github.com/podstep/podstep/internal/limit"
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/record"
)

// Load reads a recording (podstep run or proxy --record) or a reference
// kubelet trace at path; a trace's manifest is read from beside it
// (NAME.yaml for NAME.calls.txt: TraceManifest, from the path, never from
// the trace's title), and without it the recording is not FromManifest.
func Load(path string) (*Recording, error) {
	data, err := limit.ReadFile(path, record.MaxSize, "a podstep recording or a kubelet's CRI trace")
	if err != nil {
		return nil, err
	}
	if IsTrace(data) {
		r, err := ReadTrace(path, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		if m := TraceManifest(path); m != "" {
			if b, err := manifest.Load(m); err == nil {
				r.Header.Manifest.File, r.Header.Manifest.Pod, r.FromManifest = m, b.Pod, true
			}
		}
		return r, nil
	}
	r, err := Read(path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return r, nil
}
