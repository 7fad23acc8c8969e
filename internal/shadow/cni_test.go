package shadow

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// binDir is a CNI bin dir holding the named plugins (empty files).
func binDir(t *testing.T, plugins ...string) string {
	d := t.TempDir()
	for _, p := range plugins {
		if err := os.WriteFile(filepath.Join(d, p), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

const harnessConflist = `{
  "cniVersion": "1.0.0", "name": "podstep",
  "plugins": [
    {"type": "bridge", "bridge": "podstep0", "isGateway": true, "ipMasq": true, "hairpinMode": true, "mtu": 1400,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.77.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "/var/lib/podstep-harness/cni-data"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "firewall"}
  ]
}`

func TestDeriveNetwork(t *testing.T) {
	bins := binDir(t, "bridge", "ptp", "portmap", "firewall", "host-local", "calico", "loopback")
	sub := netip.MustParsePrefix("10.234.3.0/24")
	tests := []struct {
		name, file, conf string
		plain            bool
		types            []string
		keep             map[string]any // keys of the first plugin kept
		diff             string
	}{
		{name: "the harness's bridge chain is cloned", file: "/etc/cni/net.d/10-podstep.conflist", conf: harnessConflist,
			types: []string{"bridge", "portmap", "firewall"}, keep: map[string]any{"mtu": 1400.0, "ipMasq": true, "hairpinMode": true},
			diff: "the node's CNI chain from /etc/cni/net.d/10-podstep.conflist on a bridge and subnet of its own (pstep1, 10.234.3.0/24)"},
		{name: "a single .conf becomes a one-plugin list", file: "/etc/cni/net.d/10-bridge.conf",
			conf:  `{"cniVersion": "0.4.0", "name": "mynet", "type": "bridge", "bridge": "cni0", "ipam": {"type": "host-local", "subnet": "10.22.0.0/16"}}`,
			types: []string{"bridge"}, diff: "on a bridge and subnet of its own"},
		{name: "calico needs its node agent: a plain network", file: "/etc/cni/net.d/10-calico.conflist",
			conf:  `{"cniVersion": "0.3.1", "name": "k8s-pod-network", "plugins": [{"type": "calico", "ipam": {"type": "calico-ipam"}}, {"type": "portmap", "capabilities": {"portMappings": true}}]}`,
			plain: true, types: []string{"bridge", "portmap"}, diff: "the node's CNI chain (calico, portmap) has calico, which needs a node agent or cluster-wide IPAM"},
		{name: "a bridge on cluster IPAM: a plain network", file: "/x.conflist",
			conf:  `{"cniVersion": "0.3.1", "name": "n", "plugins": [{"type": "bridge", "ipam": {"type": "whereabouts"}}]}`,
			plain: true, types: []string{"bridge", "portmap"}, diff: "bridge with whereabouts IPAM"},
		{name: "no CNI config: a plain network", plain: true, types: []string{"bridge", "portmap"}, diff: "the node has no CNI config"},
		{name: "not JSON: a plain network", file: "/bad.conf", conf: "{", plain: true, types: []string{"bridge", "portmap"}, diff: "is not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Network{Name: "podstep-shadow-1", Bridge: "pstep1", Subnet: sub}
			out, diffs, err := DeriveNetwork(tt.file, []byte(tt.conf), n, "/shadow/cni-data", []string{bins})
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				CNIVersion string           `json:"cniVersion"`
				Name       string           `json:"name"`
				Plugins    []map[string]any `json:"plugins"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var types []string
			for _, p := range got.Plugins {
				types = append(types, p["type"].(string))
			}
			if !slices.Equal(types, tt.types) || got.Name != n.Name || n.Plain != tt.plain || got.CNIVersion == "" {
				t.Errorf("chain %v name %q plain %v version %q; want %v, %q, %v\n%s", types, got.Name, n.Plain, got.CNIVersion, tt.types, n.Name, tt.plain, out)
			}
			main := got.Plugins[0]
			if main["bridge"] != "pstep1" {
				t.Errorf("bridge %v, want pstep1", main["bridge"])
			}
			ipam, _ := json.Marshal(main["ipam"])
			if want := `{"dataDir":"/shadow/cni-data","ranges":[[{"subnet":"10.234.3.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}],"type":"host-local"}`; string(ipam) != want {
				t.Errorf("ipam %s, want %s", ipam, want)
			}
			for k, v := range tt.keep {
				if main[k] != v {
					t.Errorf("%s = %v, want the node's %v", k, main[k], v)
				}
			}
			if !strings.Contains(strings.Join(diffs, "\n"), tt.diff) {
				t.Errorf("differences %q: want one saying %q", diffs, tt.diff)
			}
		})
	}
}

func TestDeriveNetworkNeedsThePlugins(t *testing.T) {
	n := &Network{Name: "x", Bridge: "b", Subnet: netip.MustParsePrefix("10.234.0.0/24")}
	_, _, err := DeriveNetwork("/f.conflist", []byte(harnessConflist), n, "/d", []string{binDir(t, "bridge", "portmap")})
	if err == nil || !strings.Contains(err.Error(), `"firewall"`) {
		t.Errorf("err = %v, want one naming the missing firewall plugin", err)
	}
}

func TestFreeSubnet(t *testing.T) {
	p := netip.MustParsePrefix
	tests := []struct {
		name string
		used []string
		want string
	}{
		{"nothing used", nil, "10.234.0.0/24"},
		{"the first is a bridge's", []string{"10.234.0.1/24"}, "10.234.1.0/24"},
		{"the harnesses' and test cluster's subnets are elsewhere", []string{"10.88.77.0/24", "10.88.78.0/24", "10.88.88.0/24", "10.88.89.0/24", "10.234.0.0/23"}, "10.234.2.0/24"},
		{"a wide route covers the first ones", []string{"10.234.0.0/20"}, "10.234.16.0/24"},
		{"a host route inside one", []string{"10.234.0.77/32"}, "10.234.1.0/24"},
		{"all taken", []string{"10.0.0.0/8"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var used []netip.Prefix
			for _, u := range tt.used {
				used = append(used, p(u).Masked())
			}
			got, err := FreeSubnet(Candidates(), used)
			if tt.want == "" {
				if err == nil {
					t.Errorf("got %s, want an error", got)
				}
				return
			}
			if err != nil || got != p(tt.want) {
				t.Errorf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// On the host: an address on a link, and a subnet in a CNI config with no
// pod yet, are both in use.
func TestUsedSubnetsOnTheHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it adds a dummy link with an address")
	}
	if out, err := exec.Command("ip", "link", "add", "pstesttmp0", "type", "dummy").CombinedOutput(); err != nil {
		t.Skipf("no dummy link: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", "pstesttmp0").Run() })
	if out, err := exec.Command("ip", "addr", "add", "10.234.0.1/24", "dev", "pstesttmp0").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	conf := t.TempDir()
	if err := os.WriteFile(filepath.Join(conf, "10-x.conflist"), []byte(strings.Replace(harnessConflist, "10.88.77.0/24", "10.234.1.0/24", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	used, err := UsedSubnets(conf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10.234.0.0/24", "10.234.1.0/24"} {
		if !slices.Contains(used, netip.MustParsePrefix(want)) {
			t.Errorf("used %v: no %s", used, want)
		}
	}
	got, err := FreeSubnet(Candidates(), used)
	if err != nil || got.Addr().As4()[2] < 2 {
		t.Errorf("free subnet %s, %v: want one past 10.234.1.0/24", got, err)
	}
}

// TestPickSubnetConcurrent: shadows started at once (under different
// bases, as the sick-node tests run them two at a time) each get a subnet
// of their own; without the lock and the claims they all took the first
// free one.
func TestPickSubnetConcurrent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the claims live in " + StateBase)
	}
	const n = 6
	var wg sync.WaitGroup
	got := make([]netip.Prefix, n)
	errs := make([]error, n)
	for i := range n {
		l := Layout{Dir: filepath.Join(t.TempDir(), fmt.Sprintf("pick%d%08x", i, os.Getpid()))}
		t.Cleanup(func() { _ = os.RemoveAll(l.State()) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = pickSubnet(l, t.TempDir(), nil)
		}()
	}
	wg.Wait()
	seen := map[netip.Prefix]bool{}
	for i, p := range got {
		if errs[i] != nil {
			t.Fatalf("pick %d: %v", i, errs[i])
		}
		if seen[p] {
			t.Errorf("subnet %s picked twice: %v", p, got)
		}
		seen[p] = true
	}
}
