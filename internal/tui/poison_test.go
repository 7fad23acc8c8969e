package tui

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/replay"
	"github.com/podstep/podstep/internal/safe"
	"github.com/podstep/podstep/internal/safe/safetest"
)

// TestPoisonedRecording: a replay of a recording whose every shown string
// carries an escape sequence (safetest.Payloads) draws no control but its
// own styles' SGR, in every pane, view and step, and its window title
// none at all: the panes sanitise before they style, not only the frame.
func TestPoisonedRecording(t *testing.T) {
	f, err := os.Open(repoFile("testdata/recordings/hello.rec.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	clean, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range safetest.Payloads {
		t.Run(fmt.Sprintf("payload%d", i), func(t *testing.T) {
			rec, err := safetest.PoisonRecording(clean, p)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := replay.Load(bytes.NewReader(rec))
			if err != nil {
				t.Fatal(err)
			}
			h := pl.Header()
			fixed := epoch
			m := newModel(context.Background(), pl, Options{Now: func() time.Time { return fixed },
				Replay: &ReplayInfo{File: "x.rec", Recorded: h.Recorded, Host: h.Host, Podstep: h.Podstep,
					Runtime: h.Runtime.Name + " " + h.Runtime.Version}})
			t.Cleanup(m.close)
			rh := &replayHarness{harness: &harness{t: t, m: m, root: "/nonexistent"}, p: pl}
			rh.resize(160, 60)
			check := func(what string) {
				t.Helper()
				frame := m.render()
				if got := safe.Terminal(frame); got != frame {
					t.Fatalf("%s: the frame holds a control besides SGR: %s", what, safetest.Describe(strings.ReplaceAll(frame, "\x1b[", "[")))
				}
				if strings.Contains(frame, p) {
					t.Fatalf("%s: the payload is drawn raw", what)
				}
				v := m.View()
				if d := safetest.Describe(v.WindowTitle); d != "" {
					t.Fatalf("%s: window title: %s", what, d)
				}
			}
			check("start")
			for n := 0; n < pl.Len(); n++ {
				rh.press("n")
				for mode := 0; mode < 3; mode++ {
					check(fmt.Sprintf("step %d, view %d", n+1, mode))
					rh.press("tab")
				}
			}
			rh.press("t")
			check("timeline")
		})
	}
}
