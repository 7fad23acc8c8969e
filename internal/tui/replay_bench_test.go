package tui

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/podstep/podstep/internal/replay"
)

// benchRecording is a recording of 1,000 steps or more: the file named by
// PODSTEP_BENCH_RECORDING (e.g. a crash loop recorded on the simulator:
// podstep run --auto --sim --max-restarts 250 --backoff-scale 0.00001
// -f internal/scenario/data/crashloop.yaml --record big.rec.gz), else the
// checked-in crash loop with its restart cycle repeated to 1,000 steps.
func benchRecording(b *testing.B) []byte {
	b.Helper()
	if f := os.Getenv("PODSTEP_BENCH_RECORDING"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	f, err := os.Open(repoFile("testdata/recordings/crashloop.v1.rec.gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			b.Fatal(err)
		}
		lines = append(lines, m)
	}
	// Lines from the plan of step 12 to the step line of 16 are one restart
	// (back-off, pull, create, start, relist): repeat them, ids shifted.
	id := func(m map[string]any) int {
		for _, k := range []string{"from", "id", "step"} {
			if v, ok := m[k].(float64); ok {
				return int(v)
			}
		}
		return 0
	}
	var head, cycle, tail []map[string]any
	for _, m := range lines {
		switch i := id(m); {
		case m["type"] == "summary" || i >= 17:
			tail = append(tail, m)
		case i >= 12:
			cycle = append(cycle, m)
		default:
			head = append(head, m)
		}
	}
	var out bytes.Buffer
	w := func(m map[string]any, shift int) {
		c := make(map[string]any, len(m))
		for k, v := range m {
			c[k] = v
		}
		for _, k := range []string{"from", "id", "step"} {
			if v, ok := c[k].(float64); ok {
				c[k] = v + float64(shift)
			}
		}
		if ss, ok := c["steps"].([]any); ok {
			var ns []any
			for _, s := range ss {
				sm := map[string]any{}
				for k, v := range s.(map[string]any) {
					sm[k] = v
				}
				sm["id"] = sm["id"].(float64) + float64(shift)
				ns = append(ns, sm)
			}
			c["steps"] = ns
		}
		line, _ := json.Marshal(c)
		out.Write(append(line, '\n'))
	}
	for _, m := range head {
		w(m, 0)
	}
	shift := 0
	for ; 16+shift < 1000; shift += 5 {
		for _, m := range cycle {
			w(m, shift)
		}
	}
	for _, m := range tail {
		w(m, shift-5)
	}
	return out.Bytes()
}

// BenchmarkReplayOpen is what `podstep replay FILE` does before its first
// frame: read the recording, build the model, render at 120x40.
func BenchmarkReplayOpen(b *testing.B) {
	data := benchRecording(b)
	var steps int
	for b.Loop() {
		p, err := replay.Open(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		m := newModel(context.Background(), p, Options{Replay: &ReplayInfo{}})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		_ = m.render()
		p.Close()
	}
	if p, err := replay.Load(bytes.NewReader(data)); err == nil {
		steps = p.Len()
	}
	b.ReportMetric(float64(steps), "steps")
	b.ReportMetric(float64(len(data)), "bytes")
}

// BenchmarkReplayStep is one keypress and its frame, in the middle of a
// 1,000-step recording: forward (space) and back (p) in turn.
func BenchmarkReplayStep(b *testing.B) {
	data := benchRecording(b)
	p, err := replay.Load(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	m := newModel(context.Background(), p, Options{Replay: &ReplayInfo{}})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	p.Seek(p.Len() / 2)
	m.moved()
	keys := []tea.KeyPressMsg{keyPress("space"), keyPress("p")}
	i := 0
	for b.Loop() {
		m.Update(keys[i%2])
		_ = m.render()
		i++
	}
	b.ReportMetric(float64(p.Len()), "steps")
}
