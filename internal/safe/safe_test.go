package safe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, text, line string }{
		{"nginx:1.27", "nginx:1.27", "nginx:1.27"},
		{"héllo 世界 \\x1b", "héllo 世界 \\x1b", "héllo 世界 \\x1b"},
		{"a\nb\tc", "a\nb\tc", `a\nb\tc`},
		{"a\r\nb", `a\r` + "\nb", `a\r\nb`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`, `\x1b]52;c;aGk=\x07`},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", `\x1b]8;;http://x\x1b\link\x1b]8;;\x1b\`, `\x1b]8;;http://x\x1b\link\x1b]8;;\x1b\`},
		{"\x1bP1$r\x1b\\", `\x1bP1$r\x1b\`, `\x1bP1$r\x1b\`},
		{"\u009b2J\u009d0;t\u009c", `\u009b2J\u009d0;t\u009c`, `\u009b2J\u009d0;t\u009c`},
		{"x\x9by\xff", `x\x9by\xff`, `x\x9by\xff`},
		{"\x00\x7f", `\x00\x7f`, `\x00\x7f`},
		{"abc\u202edef", `abc\u202edef`, `abc\u202edef`},
	} {
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
		if got := Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if Clean(tc.in) != (Text(tc.in) == tc.in) {
			t.Errorf("Clean(%q) = %v", tc.in, Clean(tc.in))
		}
	}
}

func TestTerminalKeepsSGR(t *testing.T) {
	in := "\x1b[1;32mok\x1b[0m \x1b[38;2;1;2;3mx\x1b[m \x1b[2J \x1b]0;t\x07"
	want := "\x1b[1;32mok\x1b[0m \x1b[38;2;1;2;3mx\x1b[m \\x1b[2J \\x1b]0;t\\x07"
	if got := Terminal(in); got != want {
		t.Errorf("Terminal = %q, want %q", got, want)
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.AllowSGR(true)
	// 世 split across writes stays whole; colours written whole pass.
	for _, p := range []string{"\x1b[32m", "a\xe4\xb8", "\x96b", "\x1b]52;c;x\x07", "\x1b[0m\n", "end\xe4"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "\x1b[32ma世b\\x1b]52;c;x\\x07\x1b[0m\nend\\xe4"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	if Raw(w) != &buf || Raw(NewWriter(w)) != &buf {
		t.Error("Raw does not unwrap")
	}
}

// TestWriterKeepsJSON: JSON that passes through Writer is still valid and
// decodes to the same strings.
func TestWriterKeepsJSON(t *testing.T) {
	in := map[string]string{"name": "a\x1b]52;c;x\x07\u009b2J\u202e\r\n\tb", "x": `\x1b`}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := NewWriter(&buf).Write(raw); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(buf.Bytes(), "\x1b\x07\r") || strings.Contains(buf.String(), "\u009b") {
		t.Fatalf("raw control left: %q", buf.String())
	}
	var out map[string]string
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatalf("not JSON any more: %v: %s", err, buf.String())
	}
	if out["name"] != in["name"] || out["x"] != in["x"] {
		t.Errorf("changed: %q", out)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31m", "\x1b]52;c;aGk=\x07", "\u009b", "\xff\x9b", "a\nb\tc\r", "世界\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Text(s), Line(s), Terminal(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("not UTF-8: %q", out)
			}
			for i, r := range out {
				if r == 0x1b && out[i:] != "" && sgrLen(out[i:]) > 0 && out == Terminal(s) {
					continue
				}
				if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e {
					t.Fatalf("control %U left in %q (from %q)", r, out, s)
				}
			}
		}
		if l := Line(s); strings.ContainsAny(l, "\n\t") {
			t.Fatalf("Line left a newline or tab: %q", l)
		}
		printable := true
		for _, r := range s {
			if (!unicode.IsPrint(r) && r != '\n' && r != '\t') || r == utf8.RuneError {
				printable = false
			}
		}
		if printable && utf8.ValidString(s) && Text(s) != s {
			t.Fatalf("printable text changed: %q -> %q", s, Text(s))
		}
		if Clean(s) != (Text(s) == s) {
			t.Fatalf("Clean(%q) = %v, Text = %q", s, Clean(s), Text(s))
		}
		// The Writer, fed in two pieces, writes what Terminal does to the whole.
		if utf8.ValidString(s) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			w.AllowSGR(true)
			k := len(s) / 2
			for _, piece := range []string{s[:k], s[k:]} {
				if _, err := w.Write([]byte(piece)); err != nil {
					t.Fatal(err)
				}
			}
			w.Flush()
			if !strings.Contains(s, "\x1b") && buf.String() != Terminal(s) {
				t.Fatalf("Writer(%q) = %q, Terminal = %q", s, buf.String(), Terminal(s))
			}
		}
	})
}

func TestWriterEscapesSGRUnlessAllowed(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if _, err := w.Write([]byte("\x1b[31mred\x1b[0m\n")); err != nil {
		t.Fatal(err)
	}
	if want := `\x1b[31mred\x1b[0m` + "\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

// TestCut: echoed user input keeps CutRunes runes and says how long the
// whole was.
func TestCut(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"web", "web"},
		{strings.Repeat("a", CutRunes), strings.Repeat("a", CutRunes)},
		{strings.Repeat("a", 100000), strings.Repeat("a", CutRunes) + "…(100000 bytes)"},
		{strings.Repeat("é", 81), strings.Repeat("é", CutRunes) + "…(162 bytes)"},
	} {
		if got := Cut(tc.in); got != tc.want {
			t.Errorf("Cut(%.20q…) = %.100q, want %.100q", tc.in, got, tc.want)
		}
	}
}
