package record

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"github.com/podstep/podstep/internal/golden"
	"io"
	"path/filepath"
	"sort"
	"testing"
)

// fixtures are the checked-in recordings, uncompressed.
func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(repoFile("testdata/recordings/*.rec*"))
	if err != nil || len(files) < 2 {
		t.Fatalf("recordings under testdata/recordings: %v %v", files, err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		data := golden.ReadFile(t, f)
		out[filepath.Base(f)] = data
	}
	return out
}

// FuzzReadRecording feeds any bytes to the reader: it never panics, reads
// lines only up to MaxLine, and every error is one of its own kinds, with
// a line and an offset inside the input.
func FuzzReadRecording(f *testing.F) {
	// The fuzzer crawls on inputs of a few KiB: it minimizes each new find
	// for up to a minute, decoding pod specs and statuses thousands of
	// times. So the seeds are each fixture's header and its shortest line
	// of each type, in the file's order, with every field longer than 200
	// bytes left out; whole, cut, and gzipped.
	for _, data := range fixtures(f) {
		seed := shortLines(data)
		f.Add(seed)
		f.Add(seed[:len(seed)*2/3])
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		if _, err := zw.Write(seed); err != nil {
			f.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			f.Fatal(err)
		}
		f.Add(gz.Bytes())
	}
	f.Add([]byte{})
	f.Add([]byte(`{"type":"header","format":"podstep-recording","version":1}` + "\n" + `{"type":"step","id":1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := NewReader(bytes.NewReader(data))
		if err != nil {
			var ne *NotRecordingError
			var ve *VersionError
			var de *DamageError
			if !errors.As(err, &ne) && !errors.As(err, &ve) && !errors.As(err, &de) {
				t.Fatalf("NewReader: an error of another kind: %T %v", err, err)
			}
			return
		}
		gzipped := bytes.HasPrefix(data, []byte{0x1f, 0x8b})
		last := 1
		for {
			ev, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				var de *DamageError
				if !errors.As(err, &de) {
					t.Fatalf("Next: an error of another kind: %T %v", err, err)
				}
				if de.Line <= last || (!gzipped && de.Offset > int64(len(data))) {
					t.Fatalf("damage at line %d offset %d, after line %d of %d bytes", de.Line, de.Offset, last, len(data))
				}
				if _, again := rd.Next(); again != err {
					t.Fatalf("Next after an error returned %v, want the same error", again)
				}
				return
			}
			if ev.Line != last+1 || ev.Type == "" {
				t.Fatalf("event %+v after line %d", ev, last)
			}
			last = ev.Line
		}
	})
}

// shortLines is the header of a recording and, in the file's order, its
// shortest line of each type, each without the fields longer than 200 bytes.
func shortLines(data []byte) []byte {
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'})
	best := map[string]int{}
	for i, l := range lines {
		var probe struct{ Type string }
		if json.Unmarshal(l, &probe) != nil {
			continue
		}
		if j, ok := best[probe.Type]; !ok || len(l) < len(lines[j]) {
			best[probe.Type] = i
		}
	}
	var keep []int
	for _, i := range best {
		keep = append(keep, i)
	}
	sort.Ints(keep)
	var out []byte
	for _, i := range keep {
		var obj map[string]json.RawMessage
		if json.Unmarshal(lines[i], &obj) != nil {
			continue
		}
		for k, v := range obj {
			if len(v) > 200 {
				delete(obj, k)
			}
		}
		b, _ := json.Marshal(obj)
		out = append(append(out, b...), '\n')
	}
	return out
}

// TestFixtures: every checked-in recording, of this format version or an
// older one, reads to its summary.
func TestFixtures(t *testing.T) {
	for name, data := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			h, evs, err := readAll(t, data)
			if err != nil {
				t.Fatal(err)
			}
			if h.Version < 1 || h.Version > Version || h.Manifest.Pod == nil || h.Runtime.Name == "" {
				t.Errorf("header: version %d, pod %v, runtime %+v", h.Version, h.Manifest.Pod != nil, h.Runtime)
			}
			steps := 0
			for _, ev := range evs {
				if ev.Step != nil {
					steps++
				}
			}
			if steps < 5 || evs[len(evs)-1].Summary == nil { // out-of-cpu: admit fails, 6 steps
				t.Errorf("%d steps, last line %s", steps, evs[len(evs)-1].Type)
			}
		})
	}
}
