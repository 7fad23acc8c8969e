package diff

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// csiRecording is a recording of the given calls, "Method" or
// "Method{json request}", each a step of its own.
func csiRecording(calls ...string) *Recording {
	r := &Recording{Name: "r"}
	for i, c := range calls {
		m, req, _ := strings.Cut(c, "{")
		if req != "" {
			req = "{" + req
		} else {
			req = "{}"
		}
		r.Calls = append(r.Calls, &Call{Step: i + 1, StepName: "s", Method: m, Code: "OK", Request: json.RawMessage(req)})
	}
	return r
}

// TestCompareCSIChannel: a CSI driver's calls are aligned among
// themselves, apart from the CRI's: the kubelet's NodeUnpublishVolume
// falling before its garbage collector's RemoveContainer on one side and
// after RemovePodSandbox on the other is the same call, compared field by
// field (fails on the old code, which aligned one sequence: one
// NodeUnpublishVolume on each side only).
func TestCompareCSIChannel(t *testing.T) {
	unpub := func(target string) string {
		return `NodeUnpublishVolume{"volume_id":"v1","target_path":"` + target + `"}`
	}
	for _, tc := range []struct {
		name   string
		a, b   []string
		ops    []Op // the entries' ops, in order
		differ bool
	}{
		{"unpublish before or after the CRI teardown",
			[]string{"NodePublishVolume", "RunPodSandbox", "StopPodSandbox", unpub("/t"), "RemoveContainer", "RemovePodSandbox"},
			[]string{"NodePublishVolume", "RunPodSandbox", "StopPodSandbox", "RemoveContainer", "RemovePodSandbox", unpub("/t")},
			[]Op{Same, Same, Same, Same, Same, Same}, false},
		{"a reordered call's fields are still compared",
			[]string{"RunPodSandbox", unpub("/t"), "RemovePodSandbox"},
			[]string{"RunPodSandbox", "RemovePodSandbox", unpub("/other")},
			[]Op{Same, Differ, Same}, true},
		{"a CSI call on one side only",
			[]string{"NodeGetCapabilities", "NodeStageVolume", "RunPodSandbox"},
			[]string{"NodeGetCapabilities", "RunPodSandbox"},
			[]Op{Same, OnlyA, Same}, true},
		{"no CSI calls: one alignment",
			[]string{"RunPodSandbox", "CreateContainer", "StartContainer"},
			[]string{"RunPodSandbox", "StartContainer"},
			[]Op{Same, OnlyA, Same}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compare(csiRecording(tc.a...), csiRecording(tc.b...))
			var ops []Op
			for _, e := range res.Calls {
				ops = append(ops, e.Op)
			}
			if !slices.Equal(ops, tc.ops) || res.Differs() != tc.differ {
				t.Errorf("ops %v (differs %v), want %v (differs %v)\n%+v", ops, res.Differs(), tc.ops, tc.differ, res.Calls)
			}
		})
	}
}
