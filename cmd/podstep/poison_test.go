package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"strconv"
	"testing"
	"unicode/utf8"
)

// payloads are escape sequences an attacker puts in a manifest, a runtime's
// error, a recording or a proxied kubelet's metadata: the clipboard (OSC
// 52), a link (OSC 8), the window title, the screen, colours, 8-bit C1
// controls, a DCS, a line overwritten with \r, a bidi override.
var payloads = []string{
	"\x1b]52;c;cm0gLXJmIH4K\x07",
	"\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
	"\x1b]0;pwned\x07",
	"\x1b[2J\x1b[H\x1b[?1049h",
	"\x1b[31;1mRED\x1b[0m",
	"\u009b2J\u009d0;t\u009c",
	"\x1bP+q544e\x1b\\",
	"ok\rFAKE\b\b\x07",
	"abc\u202etxt.exe",
	"\x1b[6n\x1b[21t\x1bc",
}

// checkNoControl fails when out holds a raw control: ESC, any other C0
// but \n and \t, DEL, a C1 control (U+0080–U+009F) or a byte that is not
// UTF-8 (a lone 0x9b is CSI on an 8-bit terminal).
func checkNoControl(t *testing.T, what, out string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		bad := r == utf8.RuneError && n == 1 || r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f ||
			r >= 0x202a && r <= 0x202e
		if bad {
			lo, hi := max(0, i-60), min(len(out), i+60)
			t.Errorf("%s: raw control %q at byte %d: %q", what, out[i:i+n], i, out[lo:hi])
			return
		}
		i += n
	}
}

// poisonManifest is a pod whose image, command, env, annotations and the
// simulated runtime's CreateContainer error carry p.
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
`, q(p), q("boom "+p), q("docker.io/library/busybox:1.35"+p), q("echo "+p), q(p))
	f := filepath.Join(dir, "poison.yaml")
	if err := os.WriteFile(f, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// poisonRecording rewrites the recording at src with p appended to every
// string a person may be shown (names, titles, summaries, messages, events,
// errors, the header's host and runtime; CRI metadata names and images),
// and returns the new file.
func poisonRecording(t *testing.T, src, dst, p string) string {
	raw := readRecording(t, src)
	skip := map[string]bool{"type": true, "format": true, "recorded": true, "started": true, "time": true,
		"state": true, "stage": true, "code": true, "method": true, "stream": true, "output": true,
		"manifest": true, "node": true, "flags": true, "status": true, "request": true, "response": true}
	var out bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		v = poisonValue(v, p, skip)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func poisonValue(v any, p string, skip map[string]bool) any {
	switch x := v.(type) {
	case string:
		return x + p
	case []any:
		for i := range x {
			x[i] = poisonValue(x[i], p, skip)
		}
	case map[string]any:
		for k, e := range x {
			if skip[k] {
				// CRI messages: only their names, images and messages.
				if k == "request" || k == "response" {
					x[k] = poisonCRI(e, p)
				}
				continue
			}
			x[k] = poisonValue(e, p, skip)
		}
	}
	return v
}

func poisonCRI(v any, p string) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = poisonCRI(x[i], p)
		}
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "name" || k == "namespace" || k == "image" || k == "message" || k == "reason") {
				x[k] = s + p
				continue
			}
			x[k] = poisonCRI(e, p)
		}
	}
	return v
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
