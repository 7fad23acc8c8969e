package safe

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// Text returns s with every control character and escape sequence shown
// escaped (see the package comment); newlines and tabs stay.
func Text(s string) string { return escape(s, true, false) }

// Line is Text for a one-line field: newlines and tabs are escaped too.
func Line(s string) string { return escape(s, false, false) }

// Terminal is Text that lets SGR sequences (colours and text attributes:
// ESC [ digits, ';' and ':' , then 'm') through whole: for text that
// podstep itself styled after its untrusted parts went through Text.
func Terminal(s string) string { return escape(s, true, true) }

// Clean reports whether Text(s) == s, cheaply.
func Clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 && b != '\n' && b != '\t' || b >= 0x7f {
			return clean(s[i:])
		}
	}
	return true
}

func clean(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if bad(r, n, true) {
			return false
		}
		i += n
	}
	return true
}

// bad says whether the rune r (n bytes; RuneError of 1 byte is not UTF-8)
// must be escaped.
func bad(r rune, n int, keepLayout bool) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true
	case r == '\n' || r == '\t':
		return !keepLayout
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func escape(s string, keepLayout, keepSGR bool) string {
	// Fast path: nothing to do.
	i := 0
	for i < len(s) {
		b := s[i]
		if b >= 0x20 && b < 0x7f || keepLayout && (b == '\n' || b == '\t') {
			i++
			continue
		}
		if b >= 0x80 {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !bad(r, n, keepLayout) {
				i += n
				continue
			}
		}
		break
	}
	if i == len(s) {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s) + 16)
	sb.WriteString(s[:i])
	appendEscaped(&sb, s[i:], keepLayout, keepSGR)
	return sb.String()
}

func appendEscaped(sb *strings.Builder, s string, keepLayout, keepSGR bool) {
	for i := 0; i < len(s); {
		if keepSGR && s[i] == 0x1b {
			if n := sgrLen(s[i:]); n > 0 {
				sb.WriteString(s[i : i+n])
				i += n
				continue
			}
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !bad(r, n, keepLayout) {
			sb.WriteString(s[i : i+n])
			i += n
			continue
		}
		switch {
		case r == utf8.RuneError && n == 1:
			writeX(sb, s[i])
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r < 0x80:
			writeX(sb, byte(r))
		default:
			sb.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				sb.WriteByte(hexDigits[(r>>shift)&0xf])
			}
		}
		i += n
	}
}

func writeX(sb *strings.Builder, b byte) {
	sb.WriteString(`\x`)
	sb.WriteByte(hexDigits[b>>4])
	sb.WriteByte(hexDigits[b&0xf])
}

// maxSGR bounds an SGR sequence let through (a long one is escaped).
const maxSGR = 64

// sgrLen returns the length of the SGR sequence s starts with, or 0.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s) && i < maxSGR; i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == ';', c == ':':
		case c == 'm':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// Writer is an io.Writer that shows every control character and escape
// sequence written to it escaped (Text), or, once AllowSGR(true) was
// called, every one but SGR sequences written whole in one Write
// (Terminal): a command that colours its output, and sanitised what it
// colours, allows them. A UTF-8 character split across two writes is kept
// whole; Flush writes out what an unfinished one left.
type Writer struct {
	w     io.Writer
	mu    sync.Mutex
	sgr   bool
	carry []byte // the start of a UTF-8 character cut by the end of a write
}

// AllowSGR lets SGR sequences (colours) through, or not.
func (w *Writer) AllowSGR(on bool) {
	w.mu.Lock()
	w.sgr = on
	w.mu.Unlock()
}

// NewWriter wraps w. Wrapping a *Writer returns it.
func NewWriter(w io.Writer) *Writer {
	if sw, ok := w.(*Writer); ok {
		return sw
	}
	return &Writer{w: w}
}

// Unwrap returns the writer underneath (the terminal itself, for the TUI
// and for terminal detection).
func (w *Writer) Unwrap() io.Writer { return w.w }

// Write escapes p and writes it. It returns len(p) when the escaped text
// was written whole.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := string(p)
	if len(w.carry) > 0 {
		s = string(w.carry) + s
		w.carry = w.carry[:0]
	}
	// Keep an unfinished UTF-8 character for the next write.
	if k := cut(s); k < len(s) {
		w.carry = append(w.carry, s[k:]...)
		s = s[:k]
	}
	if _, err := io.WriteString(w.w, escape(s, true, w.sgr)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what an unfinished UTF-8 character left, escaped.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.carry) == 0 {
		return nil
	}
	s := Text(string(w.carry))
	w.carry = w.carry[:0]
	_, err := io.WriteString(w.w, s)
	return err
}

// cut returns where an unfinished UTF-8 character at the end of s starts,
// or len(s).
func cut(s string) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(s); k++ {
		b := s[len(s)-k]
		if b < 0x80 {
			return len(s)
		}
		if utf8.RuneStart(b) {
			if utf8.FullRuneInString(s[len(s)-k:]) {
				return len(s)
			}
			return len(s) - k
		}
	}
	return len(s)
}

// Raw returns the writer under any *Writer wrapping w, else w.
func Raw(w io.Writer) io.Writer {
	for {
		sw, ok := w.(*Writer)
		if !ok {
			return w
		}
		w = sw.w
	}
}

// CutRunes is how many runes of user input Cut keeps.
const CutRunes = 80

// Cut is user input echoed back in a message (a name that is not found,
// a value refused): at most CutRunes runes of it, then "…(N bytes)" with
// the whole input's size. It does not escape: the message quotes it (%q)
// or passes it through Line. A 100 KB name comes back as 80 characters.
func Cut(s string) string {
	n, i := 0, 0
	for i < len(s) && n < CutRunes {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		n++
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
