package cluster

import (
	"strings"
	"testing"
)

// ParseConfigz reads a kubelet's configz answer; KnownGates keeps the gates
// podstep honours, at values it accepts, sorted.
func TestParseConfigz(t *testing.T) {
	for _, tt := range []struct {
		name, body, err, gates, dns string
	}{
		{name: "v1.37 kubelet", body: `{"kubeletconfig":{"clusterDNS":["10.96.0.10","10.96.0.11"],"clusterDomain":"cluster.local",` +
			`"featureGates":{"ProcMountType":true,"ContainerRestartRules":false,"NotAGateOfPodstep":true},"cgroupRoot":"/n"}}`,
			gates: "ContainerRestartRules=false,ProcMountType=true", dns: "10.96.0.10,10.96.0.11"},
		{name: "no kubeletconfig", body: `{"kind":"Status"}`, err: "configz: no kubeletconfig object in the answer"},
		{name: "not JSON", body: `<html>`, err: "configz: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfigz([]byte(tt.body))
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := cfg.KnownGates(); g != tt.gates {
				t.Errorf("KnownGates %q, want %q", g, tt.gates)
			}
			if got := strings.Join(cfg.ClusterDNS, ","); got != tt.dns || cfg.CgroupRoot != "/n" {
				t.Errorf("clusterDNS %q cgroupRoot %q", got, cfg.CgroupRoot)
			}
		})
	}
}
