package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/live"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/report"
)

// pageStream is a live page's event stream (/events), read to its end:
// "hello" for each start over, then each line as "TYPE POD-OR-NAME"
// (header, start POD, plan, step-started NAME, step NAME, summary POD).
func pageStream(t *testing.T, url string) <-chan []string {
	t.Helper()
	resp, err := http.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan []string, 1)
	go func() {
		defer resp.Body.Close()
		var got []string
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "event: hello":
				got = append(got, "hello")
			case strings.HasPrefix(l, "data: {"):
				var m struct{ Type, Pod, Name string }
				// (A step's "pod" is its pod state, not a name: left empty.)
				_ = json.Unmarshal([]byte(l[len("data: "):]), &m)
				if m.Type != "" {
					got = append(got, strings.TrimSpace(m.Type+" "+m.Pod+m.Name))
				}
			}
		}
		out <- got
	}()
	return out
}

// TestPageShowsNewestPod: proxy --serve's page shows the first followed
// pod, then each pod whose sandbox the kubelet creates later: the open
// pages start over with it (hello, its start line, its steps), a page
// opened later gets that pod only, the pod shown before sends the page
// nothing more, and a pod podstep joins late (from a node-level list)
// does not take the page.
func TestPageShowsNewestPod(t *testing.T) {
	page := live.New()
	ts := httptest.NewServer(page.Handler())
	defer ts.Close()
	s := NewSession(SessionOptions{Auto: true, Output: report.JSON, Stdout: io.Discard, Stderr: io.Discard, Page: page,
		Header: record.Header{}})
	px := startProxied(t, s.Hooks())
	ctx := context.Background()
	settle := func() { time.Sleep(120 * time.Millisecond) } // as rig.settle

	early := pageStream(t, ts.URL)
	a := newKubelet(t, px.client, sandboxConfig("a", "uid-a"))
	a.sandbox(ctx)
	a.container(ctx, "ca", nil, "sleep", "9")
	settle()
	// A pod made on the runtime without the proxy: podstep joins it late.
	direct, err := cri.Dial(px.upstream, "", cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	newKubelet(t, direct, sandboxConfig("joined", "uid-joined")).sandbox(ctx)
	if _, err := px.client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{}); err != nil {
		t.Fatal(err)
	}
	settle()
	b := newKubelet(t, px.client, sandboxConfig("b", "uid-b"))
	b.sandbox(ctx)
	b.container(ctx, "cb", nil, "sleep", "9")
	settle()
	late := pageStream(t, ts.URL)
	a.teardown(ctx) // a's steps: not on the page any more
	settle()
	s.Close(px.srv.Stop)
	page.Close()

	first, second := <-early, <-late
	t.Logf("the page opened first: %q", first)
	hellos := 0
	var shown []string // the start lines' pods
	for i, l := range first {
		switch {
		case l == "hello":
			hellos++
		case strings.HasPrefix(l, "start "):
			shown = append(shown, strings.TrimPrefix(l, "start "))
		case hellos == 2 && (strings.HasSuffix(l, "/ca") || strings.HasPrefix(l, "step stop-") || strings.HasPrefix(l, "step remove-")):
			t.Errorf("line %d %q: a step of pod a after the page moved to pod b", i, l)
		}
	}
	if hellos != 2 || strings.Join(shown, " ") != "default/a default/b" {
		t.Errorf("the open page started %d times, showing %q; want twice: default/a, then default/b", hellos, shown)
	}
	if !contains(first, "step create/ca") || !contains(first, "step create/cb") || !contains(first, "summary default/b") {
		t.Errorf("the open page lacks a's create/ca, b's create/cb or b's summary: %q", first)
	}
	var starts []string
	for _, l := range second {
		if strings.HasPrefix(l, "start ") {
			starts = append(starts, l)
		}
	}
	if len(second) == 0 || second[0] != "hello" || strings.Join(starts, ",") != "start default/b" || !contains(second, "step create/cb") ||
		contains(second, "step create/ca") || contains(second, "hello", 1) {
		t.Errorf("a page opened after the switch: %q; want pod b only, from its start", second)
	}
}

// contains says whether ss has s (after index from[0], if given).
func contains(ss []string, s string, from ...int) bool {
	i := 0
	if len(from) > 0 {
		i = from[0]
	}
	for ; i < len(ss); i++ {
		if ss[i] == s {
			return true
		}
	}
	return false
}

// TestPagePLEGBanner: proxy --serve's page gets the PLEG notes as
// {"type":"pleg"} lines (its node-wide banner), and a late one that still
// stands when the page moves to a newer pod is given to the pages again
// after they start over; once "relisted" took it down, not again.
func TestPagePLEGBanner(t *testing.T) {
	page := live.New()
	ts := httptest.NewServer(page.Handler())
	defer ts.Close()
	s := NewSession(SessionOptions{Stdout: io.Discard, Stderr: io.Discard, Page: page, Header: record.Header{}})
	px := startProxied(t, s.Hooks())
	ctx := context.Background()
	settle := func() { time.Sleep(120 * time.Millisecond) }
	late := PLEGNote{Event: "late", AgeMs: 31000, ThresholdMs: PLEGThreshold.Milliseconds(),
		Open: &PLEGCall{Seq: 7, Method: "ListContainers", AgeMs: 30000}}

	stream := pageStream(t, ts.URL)
	newKubelet(t, px.client, sandboxConfig("a", "uid-a")).sandbox(ctx)
	settle()
	s.onPLEG(late)
	newKubelet(t, px.client, sandboxConfig("b", "uid-b")).sandbox(ctx)
	settle()
	s.onPLEG(PLEGNote{Event: "relisted", AgeMs: 40000, ThresholdMs: PLEGThreshold.Milliseconds()})
	newKubelet(t, px.client, sandboxConfig("c", "uid-c")).sandbox(ctx)
	settle()
	s.Close(px.srv.Stop)
	page.Close()

	got := <-stream
	t.Logf("the page: %q", got)
	// Each start over, and whether a pleg line came after it.
	var plegs []int
	for _, l := range got {
		switch l {
		case "hello":
			plegs = append(plegs, 0)
		case "pleg":
			if len(plegs) > 0 {
				plegs[len(plegs)-1]++
			}
		}
	}
	// Pod a: the late note; pod b: the late note again, then relisted;
	// pod c: none.
	if len(plegs) != 3 || plegs[0] != 1 || plegs[1] != 2 || plegs[2] != 0 {
		t.Errorf("pleg lines after each start over: %v; want [1 2 0] (a: late; b: late again, relisted; c: none)", plegs)
	}
}
