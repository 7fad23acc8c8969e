package probe

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTiming(t *testing.T) {
	tests := []struct {
		name  string
		probe *corev1.Probe
		want  Spec
	}{
		{name: "nil", want: Spec{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}},
		{name: "zeros", probe: &corev1.Probe{}, want: Spec{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}},
		{name: "set", probe: &corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 4, SuccessThreshold: 2, FailureThreshold: 7},
			want: Spec{InitialDelay: 5 * time.Second, Period: 2 * time.Second, Timeout: 4 * time.Second, SuccessThreshold: 2, FailureThreshold: 7}},
	}
	for _, tc := range tests {
		if got := Timing(tc.probe); got != tc.want {
			t.Errorf("%s: Timing = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestPastInitialDelay(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Spec{InitialDelay: 5 * time.Second}
	tests := []struct {
		after time.Duration
		want  bool
	}{
		{0, false}, {4900 * time.Millisecond, false}, {5 * time.Second, true}, {5900 * time.Millisecond, true}, {time.Minute, true},
	}
	for _, tc := range tests {
		if got := s.PastInitialDelay(start, start.Add(tc.after)); got != tc.want {
			t.Errorf("after %v: %v, want %v", tc.after, got, tc.want)
		}
	}
	if !(Spec{}).PastInitialDelay(start, start) {
		t.Error("no initial delay must allow probing at once")
	}
}

func TestInitialValue(t *testing.T) {
	for kind, want := range map[string]Outcome{KindReadiness: Failure, KindLiveness: Success, KindStartup: Unknown, "Other": ""} {
		if got := InitialValue(kind); got != want {
			t.Errorf("InitialValue(%s) = %q, want %q", kind, got, want)
		}
	}
}

// feed runs a sequence of results through a tracker and renders what it
// stores: "-" nothing stored, "S"/"F" stored Success/Failure, "h" skipped on
// hold. Input letters: s success, w warning, f failure, u unknown, e errored.
func feed(tr *Tracker, seq string) string {
	var b strings.Builder
	for _, c := range seq {
		if tr.OnHold() {
			b.WriteByte('h')
			continue
		}
		var r Result
		switch c {
		case 's':
			r.Outcome = Success
		case 'w':
			r.Outcome = Warning
		case 'f':
			r.Outcome = Failure
		case 'u':
			r.Outcome = Unknown
		case 'e':
			r.Outcome, r.Err = Unknown, errors.New("x")
		}
		v, set := tr.Observe(r)
		switch {
		case !set:
			b.WriteByte('-')
		case v == Success:
			b.WriteByte('S')
		default:
			b.WriteByte('F')
		}
	}
	return b.String()
}

func TestTracker(t *testing.T) {
	tests := []struct {
		kind    string
		succ    int32
		fail    int32
		in, out string
	}{
		{KindReadiness, 1, 3, "sffsfff", "S--S--F"},
		{KindReadiness, 1, 3, "ffffs", "--FFS"},
		{KindReadiness, 2, 1, "fsswf", "F-SSF"},
		{KindReadiness, 1, 3, "ffeefu", "----FF"},
		{KindReadiness, 1, 3, "uuw", "--S"},
		{KindLiveness, 1, 3, "sfffss", "S--Fhh"},
		{KindStartup, 1, 30, "fffs", "---S"},
		{KindStartup, 1, 2, "ffs", "-Fh"},
	}
	for _, tc := range tests {
		tr := NewTracker(tc.kind, Spec{SuccessThreshold: tc.succ, FailureThreshold: tc.fail})
		if got := feed(tr, tc.in); got != tc.out {
			t.Errorf("%s s=%d f=%d %q: got %q, want %q", tc.kind, tc.succ, tc.fail, tc.in, got, tc.out)
		}
	}

	tr := NewTracker(KindLiveness, Spec{SuccessThreshold: 1, FailureThreshold: 1})
	if got := feed(tr, "fs"); got != "Fh" {
		t.Fatalf("liveness before restart: %q", got)
	}
	tr.NewContainer()
	if got := feed(tr, "sf"); got != "SF" {
		t.Errorf("liveness after NewContainer: %q, want SF", got)
	}
}

func TestEventMessage(t *testing.T) {
	tests := []struct {
		kind   string
		r      Result
		msg    string
		reason string
	}{
		{KindReadiness, Result{Outcome: Failure, Output: "HTTP probe failed with statuscode: 500"},
			"Readiness probe failed: HTTP probe failed with statuscode: 500", "Unhealthy"},
		{KindLiveness, Result{Outcome: Failure, Output: `Get "http://10.0.0.1:80/": dial tcp 10.0.0.1:80: connect: connection refused`},
			`Liveness probe failed: Get "http://10.0.0.1:80/": dial tcp 10.0.0.1:80: connect: connection refused`, "Unhealthy"},
		{KindStartup, Result{Outcome: Warning, Output: "Probe terminated redirects, Response body: moved"},
			"Startup probe warning: Probe terminated redirects, Response body: moved", "ProbeWarning"},
		{KindReadiness, Result{Outcome: Unknown, Err: errors.New(`strconv.Atoi: parsing "web": invalid syntax`)},
			`Readiness probe errored and resulted in unknown state: strconv.Atoi: parsing "web": invalid syntax`, "Unhealthy"},
		{KindReadiness, Result{Outcome: Failure, Err: errors.New("unexpected EOF")},
			"Readiness probe errored and resulted in failure state: unexpected EOF", "Unhealthy"},
		{KindReadiness, Result{Outcome: Success, Output: "ok"}, "", ""},
		{KindReadiness, Result{Outcome: Unknown}, "", ""},
	}
	for _, tc := range tests {
		if got := EventMessage(tc.kind, tc.r); got != tc.msg {
			t.Errorf("EventMessage(%s, %+v) = %q, want %q", tc.kind, tc.r, got, tc.msg)
		}
		if got := EventReason(tc.r); got != tc.reason {
			t.Errorf("EventReason(%+v) = %q, want %q", tc.r, got, tc.reason)
		}
	}
}

func TestRetry(t *testing.T) {
	tests := []struct {
		results []Result
		calls   int
		want    string
	}{
		{[]Result{{Outcome: Failure, Output: "f"}}, 1, "failure f <nil>"},
		{[]Result{{Outcome: Unknown, Err: errors.New("a")}, {Outcome: Success, Output: "ok"}}, 2, "success ok <nil>"},
		{[]Result{{Outcome: Unknown, Err: errors.New("a")}, {Outcome: Unknown, Err: errors.New("b")}, {Outcome: Unknown, Err: errors.New("c")}, {Outcome: Success}}, 3, "unknown  c"},
	}
	for i, tc := range tests {
		calls := 0
		r := Retry(MaxProbeRetries, func() Result {
			calls++
			return tc.results[calls-1]
		})
		if got := fmt.Sprintf("%s %s %v", r.Outcome, r.Output, r.Err); got != tc.want || calls != tc.calls {
			t.Errorf("%d: got %q after %d calls, want %q after %d", i, got, calls, tc.want, tc.calls)
		}
	}
}

func TestResolvePort(t *testing.T) {
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "zero", ContainerPort: 0}}}
	tests := []struct {
		port intstr.IntOrString
		want int
		err  string
	}{
		{intstr.FromInt(80), 80, ""},
		{intstr.FromString("http"), 8080, ""},
		{intstr.FromString("9090"), 9090, ""},
		{intstr.FromString("grpc"), 0, `strconv.Atoi: parsing "grpc": invalid syntax`},
		{intstr.FromString("zero"), 0, "invalid port number: 0"},
		{intstr.FromInt(0), 0, "invalid port number: 0"},
		{intstr.FromInt(65535), 65535, ""},
		{intstr.FromInt(65536), 0, "invalid port number: 65536"},
		{intstr.FromInt(-1), 0, "invalid port number: -1"},
	}
	for _, tc := range tests {
		got, err := ResolvePort(tc.port, c)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.err || (tc.err == "" && got != tc.want) {
			t.Errorf("ResolvePort(%s) = %d, %q; want %d, %q", tc.port.String(), got, gotErr, tc.want, tc.err)
		}
	}
	if _, err := ResolvePort(intstr.FromString("http"), nil); err == nil {
		t.Error("a named port without a container must not resolve")
	}
}
