package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkshopRecordings replays each recording hack/record-examples.sh
// made on containerd and ships in testdata/recordings: with --auto it
// reads to its summary, which ends the way the example is about; the
// timeline page (--html) of each is written; none holds the harness
// registry's password.
func TestWorkshopRecordings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome string
		reason  string // the failure's reason, "" when the pod runs
	}{
		{"hello", "running", ""},
		{"init", "running", ""},
		{"poststart-fails", "failed", "CrashLoopBackOff"},
		{"crashloop", "failed", "CrashLoopBackOff"},
		{"pull-401", "failed", "ErrImagePull"},
		{"out-of-cpu", "failed", "OutOfcpu"},
		{"sidecar-startup-probe", "running", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join("..", "..", "testdata", "recordings", tc.name+".rec.gz")
			code, out, errOut := run(t, "replay", f, "--auto", "-o", "json")
			if code != 0 {
				t.Fatalf("replay --auto: exit %d: %s", code, errOut)
			}
			if !strings.Contains(errOut, "containerd") {
				t.Errorf("the recording was not made on containerd: %s", errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var sum struct {
				Type    string `json:"type"`
				Outcome string `json:"outcome"`
				Failure *struct {
					Reason string `json:"reason"`
				} `json:"failure"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Type != "summary" {
				t.Fatalf("the replay does not end with its summary (%v): %.300s", err, lines[len(lines)-1])
			}
			reason := ""
			if sum.Failure != nil {
				reason = sum.Failure.Reason
			}
			if sum.Outcome != tc.outcome || reason != tc.reason {
				t.Errorf("outcome %q, reason %q; want %q, %q", sum.Outcome, reason, tc.outcome, tc.reason)
			}
			if strings.Contains(readRecording(t, f), "s3cret-Podstep-Registry-Pw") {
				t.Errorf("the recording holds the harness registry's password")
			}
			page := filepath.Join(t.TempDir(), tc.name+".html")
			if code, _, errOut := run(t, "replay", f, "--html", page); code != 0 {
				t.Fatalf("replay --html: exit %d: %s", code, errOut)
			}
			if data, err := os.ReadFile(page); err != nil || !strings.Contains(string(data), `class="bar step`) {
				t.Errorf("the page of %s has no waterfall (%v)", tc.name, err)
			}
		})
	}
}
