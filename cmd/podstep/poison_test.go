package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/safe/safetest"
)

// payloads are the poisoned strings (safetest.Payloads).
var payloads = safetest.Payloads

// checkNoControl fails when out holds a raw control (safetest.Control).
func checkNoControl(t *testing.T, what, out string) {
	t.Helper()
	if d := safetest.Describe(out); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}

// poisonManifest is a pod whose command, env, annotations and the
// simulated runtime's CreateContainer error carry p.
//
// The image name is clean: a name with the payload does not parse, so it
// stops at InvalidImageName before any CRI call (as the kubelet's
// applyDefaultImageTag; steps.TestInvalidImageNameNoCRICall), and the
// runtime's error would never come.
func poisonManifest(t *testing.T, dir string, p string) string {
	q := strconv.QuoteToASCII // its escapes are YAML's double-quoted ones
	m := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: poison
  annotations:
    note: %s
    sim.podstep.dev/create-error.app: %s
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %s]
    env:
    - name: X
      value: %s
`, q(p), q("boom "+p), q("docker.io/library/busybox:1.35"), q("echo "+p), q(p))
	f := filepath.Join(dir, "poison.yaml")
	if err := os.WriteFile(f, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// poisonRecording writes the recording at src to dst with p in every
// string a person may be shown (safetest.PoisonRecording).
func poisonRecording(t *testing.T, src, dst, p string) string {
	b, err := safetest.PoisonRecording([]byte(readRecording(t, src)), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestPoisonedInputs: 10 payloads × (a manifest and the runtime's error it
// causes; a recording; a proxied kubelet's calls, TestPoisonedProxy) = 30
// poisoned inputs through run, plan, replay, diff and proxy, text, short
// and JSON: no raw control reaches stdout or stderr, and JSON stays exact.
func TestPoisonedInputs(t *testing.T) {
	clean := "../../testdata/recordings/hello.rec.gz"
	for i, p := range payloads {
		t.Run(fmt.Sprintf("payload%d", i), func(t *testing.T) {
			dir := t.TempDir()
			root, logs := dirs(t)
			check := func(what string, args ...string) (int, string) {
				t.Helper()
				code, out, errOut := run(t, args...)
				if testing.Verbose() {
					t.Logf("%s: exit %d\n%s%s", what, code, out, errOut)
				}
				checkNoControl(t, what+" stdout", out)
				checkNoControl(t, what+" stderr", errOut)
				return code, out
			}
			// A: the manifest, and the runtime's error.
			m := poisonManifest(t, dir, p)
			recA := filepath.Join(dir, "a.rec")
			base := []string{"run", "--auto", "--sim", "--settle", "0", "--grace-period", "0", "-f", m, "--root-dir", root, "--log-dir", logs}
			if code, out := check("run text", append(base, "--record", recA)...); code != ExitPodFailed || !strings.Contains(out, `boom `) {
				t.Fatalf("run: exit %d, want 1 (CreateContainerError); stdout %q", code, out)
			}
			check("run short", append(base, "-o", "short")...)
			_, js := check("run json", append(base, "-o", "json")...)
			if !jsonHolds(t, js, "boom "+p) {
				t.Errorf("run -o json does not carry the runtime's message %q exactly", "boom "+p)
			}
			check("plan", "plan", "-f", m)
			check("plan json", "plan", "-f", m, "-o", "json")
			// B: a recording.
			recB := poisonRecording(t, clean, filepath.Join(dir, "b.rec"), p)
			for _, rec := range []string{recA, recB} {
				for _, o := range []string{"text", "short", "json"} {
					check("replay "+o, "replay", "--auto", "-o", o, rec)
				}
				check("diff", "diff", rec, clean)
				check("diff json", "diff", "-o", "json", rec, clean)
				check("diff different pods", "diff", "--different-pods", rec, clean)
				check("diff different pods (other order)", "diff", "--different-pods", clean, rec)
			}
			if code, out := check("replay poisoned recording", "replay", "--auto", recB); code != ExitOK || !strings.Contains(out, "hello") {
				t.Errorf("replay of the poisoned recording: exit %d", code)
			}
		})
	}
}

// jsonHolds says whether the JSON lines of out are valid and one of their
// strings is want, exactly.
func jsonHolds(t *testing.T, out, want string) bool {
	t.Helper()
	found := false
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			found = found || x == want
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("not a JSON line: %v: %q", err, l)
			return false
		}
		walk(v)
	}
	return found
}
