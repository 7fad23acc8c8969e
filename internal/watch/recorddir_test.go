package watch

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/diff"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
)

// TestRecordDir: with --record-dir every followed pod gets its own
// recording, which appears (whole, mode 0600) when the kubelet removes
// the pod's sandbox; a pod still running is written when the session
// closes; each one reads back as that pod's calls only.
func TestRecordDir(t *testing.T) {
	recs := t.TempDir()
	s := NewSession(SessionOptions{Auto: true, Output: report.JSON, Stdout: io.Discard, Stderr: io.Discard, RecordDir: recs,
		Header: record.Header{}})
	px := startProxied(t, s.Hooks())
	c := px.client
	ctx := context.Background()
	ks := map[string]*kubelet{}
	for _, n := range []string{"a", "b"} {
		k := newKubelet(t, c, sandboxConfig(n, "uid-"+n))
		k.sandbox(ctx)
		k.container(ctx, "c"+n, nil, "sleep", "9")
		ks[n] = k
	}
	ks["a"].teardown(ctx)
	fa := filepath.Join(recs, "default_a_uid-a.rec.gz")
	fb := filepath.Join(recs, "default_b_uid-b.rec.gz")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(fa); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written after the pod's sandbox was removed", fa)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(fb); err == nil {
		t.Errorf("%s written while the pod runs", fb)
	}
	s.Close(px.srv.Stop)
	var got []string
	ents, _ := os.ReadDir(recs)
	for _, e := range ents {
		got = append(got, e.Name())
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	sort.Strings(got)
	if len(got) != 2 || got[0] != filepath.Base(fa) || got[1] != filepath.Base(fb) {
		t.Fatalf("folder holds %q, want the two pods' recordings only", got)
	}
	for n, f := range map[string]string{"a": fa, "b": fb} {
		rec, err := diff.Load(f) // refuses a recording without its summary line
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		creates := 0
		for _, call := range rec.Calls {
			if call.Container != "" && call.Container != "c"+n {
				t.Errorf("%s holds a call of container %s", f, call.Container)
			}
			if call.Method == "CreateContainer" {
				creates++
			}
		}
		if creates != 1 {
			t.Errorf("%s: %d CreateContainer calls, want 1", f, creates)
		}
	}
}
