package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/cluster"
)

func TestValidateCluster(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want string // "" = valid
	}{
		{Options{File: "pod.yaml"}, ""},
		{Options{Pod: "shop/web"}, ""},
		{Options{Pod: "web"}, ""},
		{Options{}, "-f/--filename is required"},
		{Options{Pod: "shop/web", File: "pod.yaml"}, "--pod and -f/--filename both given"},
		{Options{Pod: "/web"}, `--pod "/web": expected NAME, NAMESPACE/NAME, KIND/NAME or NAMESPACE/KIND/NAME`},
		{Options{Pod: "shop/"}, `--pod "shop/": expected`},
		{Options{Pod: "a/b/c"}, `--pod "a/b/c": expected`},
		{Options{File: "pod.yaml", InCluster: true}, ""},
		{Options{File: "pod.yaml", InCluster: true, Kubeconfig: "k"}, "--in-cluster and --kubeconfig/--context both given"},
	} {
		err := tt.o.validateCluster()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.o, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || Code(err) != ExitUsage):
			t.Errorf("%+v: %v (exit %d), want exit 2 with %q", tt.o, err, Code(err), tt.want)
		}
	}
}

// TestClusterErrCodes: denied and not-found are bad input (2), an API
// server that does not answer is 3.
func TestClusterErrCodes(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int
	}{
		{&cluster.AccessError{Verb: "get", Resource: "pods"}, ExitUsage},
		{&cluster.NotFoundError{What: "pod"}, ExitUsage},
		{&cluster.UnreachableError{Err: errors.New("refused")}, ExitRuntime},
	} {
		if got := Code(clusterErr(tt.err)); got != tt.code {
			t.Errorf("%T: exit %d, want %d", tt.err, got, tt.code)
		}
	}
}
