// Package safetest holds the poisoned inputs of the tests that check no
// raw control character reaches a terminal. It is imported by tests only.
package safetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Payloads are escape sequences an attacker puts in a manifest, a runtime's
// error, a recording or a proxied kubelet's metadata: the clipboard (OSC
// 52), a link (OSC 8), the window title, the screen, colours, C1 controls,
// a DCS, a line overwritten with \r, a bidi override, a terminal query.
var Payloads = []string{
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

// Control returns the first raw control in out, and where: ESC, any other
// C0 but \n and \t, DEL, a C1 control (U+0080–U+009F), a bidi override, or
// a byte that is not UTF-8 (a lone 0x9b is CSI on an 8-bit terminal). ok
// is false when there is none.
func Control(out string) (at int, ctl string, ok bool) {
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f ||
			r >= 0x202a && r <= 0x202e {
			return i, out[i : i+n], true
		}
		i += n
	}
	return 0, "", false
}

// Describe says where Control found a control, with the text around it.
func Describe(out string) string {
	i, c, ok := Control(out)
	if !ok {
		return ""
	}
	lo, hi := max(0, i-60), min(len(out), i+60)
	return fmt.Sprintf("raw control %q at byte %d: %q", c, i, out[lo:hi])
}

// skip are the keys of a recording's lines whose values are not poisoned:
// their format is checked (times, states, enums), or they are CRI messages
// (only names, images and messages are, poisonCRI), or the header's
// manifest and node (a poisoned manifest is a test of its own). A step's
// pod_delta is left as its whole pod's status is: its container names and
// kinds must match the pod it edits, or the recording is damaged.
var skip = map[string]bool{"type": true, "format": true, "recorded": true, "started": true, "time": true,
	"state": true, "stage": true, "code": true, "method": true, "stream": true, "output": true,
	"manifest": true, "node": true, "flags": true, "status": true, "request": true, "response": true,
	"pod_delta": true}

// PoisonRecording returns the recording rec (plain JSON lines) with p
// appended to every string a person may be shown: names, titles,
// summaries, messages, events, errors, logs, the header's host and
// runtime, and the names, images and messages of its CRI messages.
func PoisonRecording(rec []byte, p string) ([]byte, error) {
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSpace(rec), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, err
		}
		b, err := json.Marshal(poison(v, p))
		if err != nil {
			return nil, err
		}
		out.Write(append(b, '\n'))
	}
	return out.Bytes(), nil
}

func poison(v any, p string) any {
	switch x := v.(type) {
	case string:
		return x + p
	case []any:
		for i := range x {
			x[i] = poison(x[i], p)
		}
	case map[string]any:
		for k, e := range x {
			switch {
			case k == "request" || k == "response":
				x[k] = poisonCRI(e, p)
			case !skip[k]:
				x[k] = poison(e, p)
			}
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
