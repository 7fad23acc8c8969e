package session

import (
	"testing"

	"github.com/podstep/podstep/internal/workload"
)

// TestParsePodRef: --pod takes a pod or a workload, with or without a
// namespace, in kubectl's forms; anything else is one usage error.
func TestParsePodRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want podRef
		bad  bool
	}{
		{in: "web-0", want: podRef{kind: workload.KindPod, name: "web-0"}},
		{in: "app/web-0", want: podRef{ns: "app", kind: workload.KindPod, name: "web-0"}},
		{in: "deploy/web", want: podRef{kind: workload.KindDeployment, name: "web"}},
		{in: "deployment.apps/web", want: podRef{kind: workload.KindDeployment, name: "web"}},
		{in: "STS/db", want: podRef{kind: workload.KindStatefulSet, name: "db"}},
		{in: "app/cj/nightly", want: podRef{ns: "app", kind: workload.KindCronJob, name: "nightly"}},
		{in: "deploy/pod/web", want: podRef{ns: "deploy", kind: workload.KindPod, name: "web"}},
		{in: "app/widget/x", bad: true},
		{in: "a/b/c/d", bad: true},
		{in: "/web", bad: true},
		{in: "deploy/", bad: true},
	} {
		got, err := parsePodRef(tc.in)
		if tc.bad {
			if err == nil || Code(err) != ExitUsage {
				t.Errorf("%q: err = %v, want a usage error", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}
