package gate

import (
	"strings"
	"testing"
)

func TestDefaults(t *testing.T) {
	var g Gates
	for _, tc := range []struct {
		n    Name
		want bool
	}{
		{ContainerRestartRules, true},
		{RestartAllContainersOnContainerExits, true},
		{ContainerStopSignals, false},
		{PodLevelResources, true},
		{SupplementalGroupsPolicy, true},
		{ProcMountType, true},
	} {
		if got := g.Enabled(tc.n); got != tc.want {
			t.Errorf("%s default = %v, want %v (kube_features.go v1.37)", tc.n, got, tc.want)
		}
	}
	if got := g.Describe(ContainerStopSignals); got != "ContainerStopSignals (alpha, off by default in v1.37)" {
		t.Errorf("Describe = %q", got)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		check   Name
		want    bool
		wantErr string
	}{
		{in: "ContainerStopSignals=true", check: ContainerStopSignals, want: true},
		{in: " ContainerRestartRules=false , PodLevelResources=true", check: ContainerRestartRules, want: false},
		{in: "", check: ContainerStopSignals, want: false},
		{in: "Nope=true", wantErr: `unknown feature gate "Nope"`},
		{in: "ContainerStopSignals", wantErr: "expected Name=true or Name=false"},
		{in: "ContainerStopSignals=yes", wantErr: "expected true or false"},
		{in: "ProcMountType=false", wantErr: "locked to true"},
	} {
		g, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if got := g.Enabled(tc.check); got != tc.want {
			t.Errorf("Parse(%q).Enabled(%s) = %v, want %v", tc.in, tc.check, got, tc.want)
		}
	}
	g, _ := Parse("ContainerStopSignals=true")
	if g.String() != "ContainerStopSignals=true" || !strings.Contains(g.Describe(ContainerStopSignals), "set on by --feature-gates") {
		t.Errorf("String %q, Describe %q", g.String(), g.Describe(ContainerStopSignals))
	}
}
