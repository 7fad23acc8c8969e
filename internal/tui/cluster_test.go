package tui

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/podstep/podstep/internal/cluster"
)

// fakeCluster is a ClusterSource that hands out a fixed view (the data
// type session.Options.ClusterView returns, not a fake API server) and
// counts its reads; block, when set, holds each read until it is closed.
type fakeCluster struct {
	mu    sync.Mutex
	reads int
	v     *cluster.PodView
	err   error
	block chan struct{}
}

func (f *fakeCluster) source(ctx context.Context) (*cluster.PodView, error) {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.v, f.err
}

func (f *fakeCluster) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// noSecretView is what the API server says of TestPodMissingSecret's pod:
// the kubelet's FailedMount, with a terminal escape the API text carried.
func noSecretView() *cluster.PodView {
	return &cluster.PodView{
		Server: "https://127.0.0.1:22700", Pod: "shop/nosecret", UID: "0c6a7a51-2b39-4a8f-9d38-1f0f3b0bd6e1",
		ReplayUID: "replay-uid", ResourceVersion: "4711", Node: "tuicluster-node-16", Phase: "Pending",
		Containers: []cluster.ContainerStatus{{Name: "app", State: "waiting", Reason: "ContainerCreating"}},
		Events: []cluster.Event{
			{Type: "Normal", Reason: "Scheduled", Message: "Successfully assigned shop/nosecret to tuicluster-node-16", Source: "default-scheduler", Count: 1},
			{Type: "Warning", Reason: "FailedMount", Message: "MountVolume.SetUp failed for volume \"creds\" : secret \"absent\" not found\x1b]0;pwned\x07", Source: "kubelet tuicluster-node-16", Count: 3},
		},
		Notes: []string{"podstep's replay is its own pod beside the kubelet's"},
	}
}

// TestClusterPane runs the pod whose Secret is missing with a cluster
// view: the view is read when the run ends, K shows it under podstep's
// failing step (both FailedMount reasons on one screen), K hides it, K
// again reads it again.
func TestClusterPane(t *testing.T) {
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			f := &fakeCluster{v: noSecretView()}
			h := newHarness(t, loadBundle(t, "testdata/nosecret.yaml"), Options{Cluster: f.source})
			h.resize(sz.w, sz.h)
			if !strings.Contains(h.frame(), "K cluster") && sz.w >= 120 {
				t.Errorf("the footer has no K:\n%s", h.frame())
			}
			h.press("c")
			if f.count() != 1 {
				t.Fatalf("%d reads at the run's end, want 1", f.count())
			}
			if h.m.clus.shown {
				t.Fatal("the cluster pane is up before K")
			}
			h.press("K")
			if f.count() != 2 {
				t.Errorf("%d reads after K, want 2", f.count())
			}
			fr := h.frame()
			checkGolden(t, fmt.Sprintf("cluster-nosecret-%dx%d", sz.w, sz.h), fr)
			for _, want := range []string{"podstep: ✗ step", "FailedMount", "cluster: FailedMount (kubelet"} {
				if !strings.Contains(fr, want) {
					t.Errorf("frame lacks %q:\n%s", want, fr)
				}
			}
			if raw := h.m.render(); strings.Contains(raw, "\x1b]0;") || strings.Contains(raw, "\x07") {
				t.Errorf("the API server's escape reached the frame: %q", raw)
			}
			for _, small := range []struct{ w, h int }{{60, 16}, {80, 24}, {200, 60}} {
				h.resize(small.w, small.h)
				lines := strings.Split(strings.TrimSuffix(h.frame(), "\n"), "\n")
				if len(lines) != small.h {
					t.Errorf("at %dx%d: %d lines", small.w, small.h, len(lines))
				}
				for i, l := range lines {
					if n := len([]rune(l)); n > small.w {
						t.Errorf("at %dx%d: line %d is %d wide", small.w, small.h, i, n)
					}
				}
			}
			h.resize(sz.w, sz.h)
			h.press("K")
			if h.m.clus.shown || strings.Contains(h.frame(), "cluster: FailedMount") {
				t.Error("K did not hide the cluster pane")
			}
			h.press("K")
			if f.count() != 3 || !h.m.clus.shown {
				t.Errorf("K again: %d reads, shown %v", f.count(), h.m.clus.shown)
			}
		})
	}
}

// TestClusterPaneNeverBlocks: an API server that does not answer keeps
// the pane at "reading", while the keys still work; its answer then shows.
func TestClusterPaneNeverBlocks(t *testing.T) {
	f := &fakeCluster{v: noSecretView(), block: make(chan struct{})}
	h := newHarness(t, loadBundle(t, "testdata/nosecret.yaml"), Options{Cluster: f.source})
	h.resize(120, 40)
	start := time.Now()
	_, cmd := h.m.Update(keyPress("K"))
	if d := time.Since(start); d > time.Second || cmd == nil {
		t.Fatalf("K took %v (cmd %v)", d, cmd != nil)
	}
	got := make(chan tea.Msg, 1)
	go func() { got <- cmd() }()
	if !strings.Contains(h.frame(), "reading the pod and its Events") {
		t.Errorf("no 'reading' while the API server is silent:\n%s", h.frame())
	}
	h.press("space") // the run goes on meanwhile
	if h.m.lastID != 1 {
		t.Errorf("space ran step %d, want 1", h.m.lastID)
	}
	close(f.block)
	select {
	case msg := <-got:
		h.m.Update(msg)
	case <-time.After(5 * time.Second):
		t.Fatal("the read did not end")
	}
	if !strings.Contains(h.frame(), "cluster: FailedMount") {
		t.Errorf("the view read late is not shown:\n%s", h.frame())
	}
}

// TestClusterKeyWithoutCluster: K on a run that is no cluster's says so.
func TestClusterKeyWithoutCluster(t *testing.T) {
	h := newHarness(t, loadBundle(t, "testdata/nosecret.yaml"), Options{})
	h.resize(120, 40)
	if strings.Contains(h.frame(), "K cluster") {
		t.Error("K in the footer without a cluster")
	}
	h.press("K")
	if !strings.Contains(h.frame(), "no cluster: K shows") || h.m.clus.shown {
		t.Errorf("K without a cluster:\n%s", h.frame())
	}
}

// TestClusterProgram drives the real event loop: the view read at the
// start (Init), shown with K.
func TestClusterProgram(t *testing.T) {
	f := &fakeCluster{v: noSecretView()}
	h := newHarness(t, loadBundle(t, "testdata/nosecret.yaml"), Options{Cluster: f.source})
	tm := teatest.NewTestModel(t, h.m, teatest.WithInitialTermSize(120, 40))
	for deadline := time.Now().Add(5 * time.Second); f.count() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if f.count() == 0 {
		t.Fatal("the view was not read at the start")
	}
	tm.Send(keyPress("K"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("FailedMount (kubelet"))
	}, teatest.WithDuration(10*time.Second))
	tm.Send(keyPress("q"))
	tm.Send(keyPress("c"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("torn down"))
	}, teatest.WithDuration(10*time.Second))
	tm.Send(keyPress("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}
