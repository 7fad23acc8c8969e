package record

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/podstep/podstep/internal/report"
)

// MaxLine bounds one line of a recording (a step with its calls and pod
// status is a few KiB; a pull of a huge image list could be more).
const MaxLine = 64 << 20

// MaxSize bounds a whole recording, uncompressed: replay, its page and diff
// refuse one larger (a run's recording is a few MiB; a .gz can expand a
// thousandfold).
const MaxSize = 256 << 20

// NotRecordingError says the input is not a podstep recording at all.
type NotRecordingError struct {
	// Why says what was found instead.
	Why string
}

func (e *NotRecordingError) Error() string {
	return "not a podstep recording: " + e.Why +
		` (a recording starts with a line {"type":"header","format":"` + Format + `",...}, written by podstep run --record)`
}

// VersionError says the recording is of a format version newer than this
// reader knows.
type VersionError struct {
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("recording format version %d is newer than this podstep reads (%d and older): upgrade podstep", e.Version, Version)
}

// DamageError says where a recording stops being readable: the line and
// the byte offset of its start in the (uncompressed) stream, and why.
// Everything before it was read.
type DamageError struct {
	Line   int
	Offset int64
	Why    string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("line %d (byte %d): %s", e.Line, e.Offset, e.Why)
}

// Reader reads a recording, plain or gzip-compressed, one line at a time.
type Reader struct {
	br     *bufio.Reader
	header Header
	line   int   // lines read
	offset int64 // bytes read
	err    error // sticky: damage or io.EOF
	ended  bool  // the summary was read
	pods   report.PodFolder
}

// NewReader reads and checks the header. It returns a *NotRecordingError
// when the input is not a recording, a *VersionError when it is of a newer
// format, and a *DamageError when the header line itself is cut off.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if len(magic) == 0 {
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read recording: %w", err)
		}
		return nil, &NotRecordingError{Why: "the file is empty"}
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, &NotRecordingError{Why: "a damaged gzip header: " + err.Error()}
		}
		br = bufio.NewReaderSize(gz, 64<<10)
	}
	// Refuse early what cannot be a header, without reading a long line.
	first, _ := br.Peek(64)
	if len(first) == 0 {
		return nil, &NotRecordingError{Why: "the file is empty"}
	}
	if first[0] != '{' {
		if looksText(first) {
			line, _, _ := bytes.Cut(first, []byte{'\n'})
			return nil, &NotRecordingError{Why: fmt.Sprintf("line 1 is not a JSON object: it starts %q", line)}
		}
		return nil, &NotRecordingError{Why: "it starts with binary data"}
	}
	rd := &Reader{br: br}
	raw, err := rd.next()
	if raw == nil {
		return nil, err
	}
	if err := rd.readHeader(raw); err != nil {
		return nil, err
	}
	return rd, nil
}

func (rd *Reader) readHeader(raw []byte) error {
	if !utf8.Valid(raw) {
		return &NotRecordingError{Why: "line 1 is not text"}
	}
	var probe struct {
		Type    string `json:"type"`
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return &NotRecordingError{Why: "line 1 is not a JSON object (" + shortErr(err) + ")"}
	}
	if probe.Type != TypeHeader || probe.Format != Format {
		return &NotRecordingError{Why: fmt.Sprintf("line 1 is JSON but not a header (type %q, format %q)", probe.Type, probe.Format)}
	}
	if probe.Version < 1 {
		return &NotRecordingError{Why: fmt.Sprintf("the header's version %d is not a format version (1 or more)", probe.Version)}
	}
	if probe.Version > Version {
		return &VersionError{Version: probe.Version}
	}
	if err := json.Unmarshal(raw, &rd.header); err != nil {
		return &DamageError{Line: 1, Offset: 0, Why: "the header does not decode: " + shortErr(err)}
	}
	return nil
}

// Header returns the recording's header.
func (rd *Reader) Header() Header { return rd.header }

// Next returns the next line's event. At the end it returns io.EOF, or,
// when the recording ends before its summary line, a *DamageError saying
// so; a line that cannot be read is a *DamageError too. After an error,
// Next returns it again.
func (rd *Reader) Next() (Event, error) {
	if rd.err != nil {
		return Event{}, rd.err
	}
	start, line := rd.offset, rd.line+1
	raw, err := rd.next()
	if raw == nil {
		if err == io.EOF && !rd.ended {
			err = &DamageError{Line: line, Offset: start,
				Why: "the recording ends without a summary line: the run did not finish writing it (podstep was killed, or the file was cut)"}
		}
		rd.err = err
		return Event{}, err
	}
	ev, err := decode(raw, line, start)
	if err != nil {
		rd.err = err
		return Event{}, err
	}
	if rd.ended {
		rd.err = &DamageError{Line: line, Offset: start, Why: "a line after the summary line"}
		return Event{}, rd.err
	}
	if ev.Type == TypeSummary {
		rd.ended = true
	}
	if ev.Step != nil {
		// Version 2 writes the whole pod on some step lines and what
		// changed on the others: every reader gets the whole pod.
		if err := rd.pods.Fold(ev.Step); err != nil {
			rd.err = &DamageError{Line: line, Offset: start, Why: fmt.Sprintf("a %q line's %s", TypeStep, err)}
			return Event{}, rd.err
		}
	}
	return ev, nil
}

// next reads one line without its newline. It returns nil and io.EOF at
// a clean end, and nil and a *DamageError for a line cut off by the end of
// the input, a line too long, or a broken compressed stream.
func (rd *Reader) next() ([]byte, error) {
	start := rd.offset
	rd.line++
	var buf []byte
	for {
		chunk, err := rd.br.ReadSlice('\n')
		buf = append(buf, chunk...)
		rd.offset += int64(len(chunk))
		if len(buf) > MaxLine {
			return nil, &DamageError{Line: rd.line, Offset: start, Why: fmt.Sprintf("the line is longer than %d MiB", MaxLine>>20)}
		}
		if rd.offset > MaxSize {
			return nil, &DamageError{Line: rd.line, Offset: start, Why: fmt.Sprintf("the recording is larger than %d MiB (uncompressed): podstep reads at most that", MaxSize>>20)}
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(buf[:len(buf)-1], []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(buf) == 0:
			return nil, io.EOF
		case err == io.EOF:
			return nil, &DamageError{Line: rd.line, Offset: start,
				Why: fmt.Sprintf("the file ends inside this line, after %d bytes of it (cut off)", len(buf))}
		case errors.Is(err, io.ErrUnexpectedEOF) && len(buf) == 0:
			// A gzip stream that was flushed line by line but never closed:
			// every line before is whole.
			return nil, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, &DamageError{Line: rd.line, Offset: start,
				Why: fmt.Sprintf("the compressed stream ends inside this line, after %d bytes of it (the .gz file is cut off)", len(buf))}
		default:
			return nil, &DamageError{Line: rd.line, Offset: start, Why: "read: " + err.Error()}
		}
	}
}

// decode decodes one event line by its type.
func decode(raw []byte, line int, offset int64) (Event, error) {
	ev := Event{Line: line, Offset: offset, Raw: raw}
	bad := func(why string) (Event, error) {
		return Event{}, &DamageError{Line: line, Offset: offset, Why: why}
	}
	if !utf8.Valid(raw) {
		return bad("the line is not text (invalid UTF-8)")
	}
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return bad("not a JSON object: " + shortErr(err))
	}
	if probe.Type == "" {
		return bad(`a JSON object without a "type"`)
	}
	ev.Type = probe.Type
	var target any
	switch probe.Type {
	case TypeHeader:
		return bad("a second header line")
	case TypeStart:
		ev.Start = &Start{}
		target = ev.Start
	case TypePlan:
		ev.Plan = &Plan{}
		target = ev.Plan
	case TypeStepStarted:
		ev.StepStarted = &StepStarted{}
		target = ev.StepStarted
	case TypeCallSent:
		ev.CallSent = &CallSent{}
		target = ev.CallSent
	case TypeCall:
		ev.Call = &Call{}
		target = ev.Call
	case TypeStep:
		ev.Step = &report.StepJSON{}
		target = ev.Step
	case TypeLog:
		ev.Log = &Log{}
		target = ev.Log
	case TypeSummary:
		ev.Summary = &report.Summary{}
		target = ev.Summary
	default:
		// A line type of a newer podstep of the same format version: kept
		// raw, for readers to skip.
		return ev, nil
	}
	if err := json.Unmarshal(raw, target); err != nil {
		return bad(fmt.Sprintf("a %q line that does not decode: %s", probe.Type, shortErr(err)))
	}
	if err := check(&ev); err != "" {
		return bad(fmt.Sprintf("a %q line %s", probe.Type, err))
	}
	return ev, nil
}

// check catches lines that decode but cannot be right.
func check(ev *Event) string {
	switch {
	case ev.Step != nil && ev.Step.ID < 1:
		return fmt.Sprintf("with step id %d (ids start at 1)", ev.Step.ID)
	case ev.Plan != nil && ev.Plan.From < 1:
		return fmt.Sprintf("replacing from step %d (ids start at 1)", ev.Plan.From)
	case ev.StepStarted != nil && ev.StepStarted.ID < 1:
		return fmt.Sprintf("with step id %d (ids start at 1)", ev.StepStarted.ID)
	}
	return checkDurations(ev)
}

// MaxMs is the longest duration a recording may hold, in milliseconds:
// time.Duration's range (about 292 years). Longer, or negative, cannot
// be a time podstep measured: the reader refuses it rather than print
// "-9223372036854.78s" later.
const MaxMs = float64(math.MaxInt64 / int64(time.Millisecond))

// checkDurations names the first duration of a line that is negative or
// beyond MaxMs, by its field path ("calls[2].duration_ms").
func checkDurations(ev *Event) string {
	type field struct {
		path string
		ms   float64
	}
	var fs []field
	calls := func(prefix string, cs []report.CallJSON) {
		for i, c := range cs {
			fs = append(fs, field{fmt.Sprintf("%scalls[%d].duration_ms", prefix, i), c.DurationMs})
		}
	}
	switch {
	case ev.Step != nil:
		fs = append(fs, field{"duration_ms", ev.Step.DurationMs})
		calls("", ev.Step.Calls)
	case ev.Call != nil:
		fs = append(fs, field{"duration_ms", ev.Call.DurationMs})
	case ev.Summary != nil:
		t := ev.Summary.Timing
		fs = append(fs, field{"timing.create_ms", t.CreateMs}, field{"timing.cri_ms", t.CRIMs},
			field{"timing.wait_ms", t.WaitMs}, field{"timing.teardown_ms", t.TeardownMs})
		// The wall time less the runtime's and the waits' can be below 0
		// when calls overlap: only its size is bounded.
		if math.Abs(t.OverheadMs) > MaxMs {
			return fmt.Sprintf("with timing.overhead_ms %v: expected %.0f to %.0f ms", t.OverheadMs, -MaxMs, MaxMs)
		}
	}
	for _, f := range fs {
		if f.ms < 0 || f.ms > MaxMs || math.IsNaN(f.ms) {
			return fmt.Sprintf("with %s %v: expected a duration of 0 to %.0f ms", f.path, f.ms, MaxMs)
		}
	}
	return ""
}

// looksText says whether b is UTF-8 text without control characters other
// than white space, allowing a rune cut at its end.
func looksText(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return !utf8.FullRune(b)
		}
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
		b = b[n:]
	}
	return true
}

// shortErr is a JSON error's text, bounded.
func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
