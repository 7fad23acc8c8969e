package watch

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/report"
)

// TestCutBody: what the watcher keeps of a body: small ones as they are,
// long fields cut with their size said, big lists cut until the message
// fits, whole runes only.
func TestCutBody(t *testing.T) {
	big := strings.Repeat("x", 15<<20)
	many := &runtimeapi.ListContainersResponse{}
	for range 20000 {
		many.Containers = append(many.Containers, &runtimeapi.Container{Id: strings.Repeat("a", 64), PodSandboxId: strings.Repeat("b", 64)})
	}
	for _, tc := range []struct {
		name  string
		in    proto.Message
		limit int
		same  bool   // kept as it is
		want  string // in the JSON of what is kept
		max   int    // protobuf size of what is kept
	}{
		{"small", &runtimeapi.ExecSyncResponse{Stdout: []byte("hello")}, MaxBody, true, "", 100},
		{"15 MB of output", &runtimeapi.ExecSyncResponse{Stdout: []byte(big), Stderr: []byte("e")}, MaxBody, false,
			"cut by podstep: 15728640 bytes", FieldCut + 100},
		{"long error message in a status", &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Message: big}}, MaxBody, false,
			"…[cut by podstep: 15728640 bytes]", FieldCut + 200},
		{"a field just over", &runtimeapi.ExecSyncResponse{Stdout: []byte(strings.Repeat("y", FieldCut+1))}, MaxBody, false,
			"cut by podstep: 16385 bytes", FieldCut + 100},
		{"20000 containers", many, MaxBody, false, "", MaxBody},
		{"no budget left", &runtimeapi.ExecSyncResponse{Stdout: []byte(strings.Repeat("z", 5000)), ExitCode: 3}, 0, false,
			"cut by podstep: 5000 bytes", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := cutBody(tc.in, tc.limit)
			if (got == tc.in) != tc.same {
				t.Errorf("kept as it is: %v, want %v", got == tc.in, tc.same)
			}
			if n != proto.Size(got) || n > tc.max {
				t.Errorf("size %d (reported %d), want at most %d", proto.Size(got), n, tc.max)
			}
			b := prototext.Format(got)
			if _, err := json.Marshal(report.CallToJSON(cri.Call{Method: "X", Response: got})); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b, tc.want) {
				t.Errorf("kept %.300s…, want %q in it", b, tc.want)
			}
		})
	}
	if s := cutString("ééé", 3); !utf8.ValidString(s) || !strings.HasPrefix(s, "é…") {
		t.Errorf("cutString cut a rune: %q", s)
	}
	err := cutErr(status.Error(codes.Unknown, big))
	if st := status.Convert(err); st.Code() != codes.Unknown || len(st.Message()) > FieldCut+100 || !strings.Contains(st.Message(), "15728640 bytes") {
		t.Errorf("cutErr: %s %d bytes", st.Code(), len(st.Message()))
	}
}

// TestStepBudget: a step keeps StepBudget of bodies; its later calls are
// cut to almost nothing, so a step (a recording's line) stays bounded.
func TestStepBudget(t *testing.T) {
	o := &openStep{}
	body := &runtimeapi.ListContainersResponse{} // 200 KiB of short fields: under MaxBody and FieldCut
	for range 1000 {
		body.Containers = append(body.Containers, &runtimeapi.Container{Id: strings.Repeat("i", 100), PodSandboxId: strings.Repeat("s", 100)})
	}
	total := 0
	for range 200 {
		total += proto.Size(o.keepBody(body))
	}
	if total > StepBudget+200*200 {
		t.Errorf("200 calls of 200 KiB kept %d bytes, want at most StepBudget (%d) and their marks", total, StepBudget)
	}
	if total < StepBudget/2 {
		t.Errorf("kept only %d bytes", total)
	}
}

// TestForgetRemovedPods: past MaxPods removed pods, the oldest are
// forgotten (OnForget sees each once, after its events) and the watcher's
// maps shrink back.
func TestForgetRemovedPods(t *testing.T) {
	var mu sync.Mutex
	var forgot []string
	r := newRig(t, Options{MaxPods: 3, OnForget: func(p *Pod) {
		mu.Lock()
		forgot = append(forgot, p.Name)
		mu.Unlock()
	}})
	ctx := context.Background()
	for i := range 10 {
		name := string(rune('a' + i))
		k := newKubelet(t, r.client, sandboxConfig(name, "uid-"+name))
		k.sandbox(ctx)
		k.container(ctx, "app", nil, "sleep", "9")
		k.teardown(ctx)
	}
	r.settle()
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(forgot, ""); got != "abcdefg" {
		t.Errorf("forgot %q, want the 7 oldest: abcdefg", got)
	}
	var kept []string
	for _, p := range r.w.Pods() {
		kept = append(kept, p.Name)
	}
	if strings.Join(kept, "") != "hij" {
		t.Errorf("remembers %q, want hij", kept)
	}
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if len(r.w.pods) != 3 || len(r.w.list) != 3 || len(r.w.removed) != 3 || len(r.w.bySandbox) != 0 || len(r.w.byContainer) > 3 {
		t.Errorf("pods %d, list %d, removed %d, bySandbox %d, byContainer %d; want 3, 3, 3, 0, ≤3",
			len(r.w.pods), len(r.w.list), len(r.w.removed), len(r.w.bySandbox), len(r.w.byContainer))
	}
}
