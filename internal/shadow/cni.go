package shadow

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Network is a shadow's private CNI network.
type Network struct {
	Name   string       `json:"name"`   // the conflist's name (iptables rule comments carry it)
	Bridge string       `json:"bridge"` // its bridge ("" for a ptp chain)
	Subnet netip.Prefix `json:"subnet"`
	// From is the node's conflist it was derived from ("" when none or
	// plain); Plain: a bridge network instead of the node's chain.
	From  string `json:"from,omitempty"`
	Plain bool   `json:"plain,omitempty"`
}

// clonable are the plugins a private copy of runs with no node agent and
// no cluster IPAM: its state is its bridge, its IPAM dir and its iptables
// rules, all the shadow's own.
var clonable = map[string]bool{"bridge": true, "ptp": true, "portmap": true, "loopback": true,
	"tuning": true, "bandwidth": true, "firewall": true}

// NodeConflist is the node's CNI config containerd uses: the first file
// (by name) of conf dir ending in .conf, .conflist or .json; "" when none.
func NodeConflist(confDir string) (string, []byte, error) {
	ents, err := os.ReadDir(confDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil, nil
		}
		return "", nil, err
	}
	for _, e := range ents { // sorted by name, as libcni's ConfFiles
		ext := filepath.Ext(e.Name())
		if e.Type().IsRegular() && (ext == ".conf" || ext == ".conflist" || ext == ".json") {
			p := filepath.Join(confDir, e.Name())
			data, err := os.ReadFile(p)
			return p, data, err
		}
	}
	return "", nil, nil
}

// DeriveNetwork makes the shadow's conflist from the node's (file and data;
// none: a plain network): the same plugin chain with n's name, its own
// bridge, and host-local IPAM on n.Subnet with dataDir; a chain with a
// plugin that needs a node agent or cluster IPAM (calico, cilium, aws-cni,
// flannel, ...) becomes a plain bridge + host-local + portmap network,
// said in the differences. binDirs are checked for the plugins.
func DeriveNetwork(file string, data []byte, n *Network, dataDir string, binDirs []string) ([]byte, []string, error) {
	var diffs []string
	conf := map[string]any{}
	why := ""
	switch {
	case len(data) == 0:
		why = "the node has no CNI config"
	default:
		if err := json.Unmarshal(data, &conf); err != nil {
			why = fmt.Sprintf("the node's CNI config %s is not JSON (%v)", file, err)
		}
	}
	var plugins []any
	if why == "" {
		if p, ok := conf["plugins"].([]any); ok {
			plugins = p
		} else {
			single := map[string]any{}
			for k, v := range conf {
				if k != "name" && k != "cniVersion" {
					single[k] = v
				}
			}
			plugins = []any{single}
		}
		var types, foreign []string
		main := 0
		for _, p := range plugins {
			pm, _ := p.(map[string]any)
			typ, _ := pm["type"].(string)
			types = append(types, typ)
			ipam, _ := pm["ipam"].(map[string]any)
			ipamType, _ := ipam["type"].(string)
			switch {
			case !clonable[typ]:
				foreign = append(foreign, typ)
			case ipam != nil && ipamType != "host-local" && ipamType != "static":
				foreign = append(foreign, typ+" with "+ipamType+" IPAM")
			case typ == "bridge" || typ == "ptp":
				main++
			}
		}
		switch {
		case len(foreign) > 0:
			why = fmt.Sprintf("the node's CNI chain (%s) has %s, which needs a node agent or cluster-wide IPAM: not cloned", strings.Join(types, ", "), strings.Join(foreign, ", "))
		case main != 1:
			why = fmt.Sprintf("the node's CNI chain (%s) has no one bridge or ptp plugin to give an address", strings.Join(types, ", "))
		}
	}
	version, _ := conf["cniVersion"].(string)
	if why != "" {
		n.Plain, n.From = true, ""
		if version == "" {
			version = "0.4.0"
		}
		plugins = []any{
			map[string]any{"type": "bridge", "isGateway": true, "ipMasq": true, "hairpinMode": true},
			map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
		}
		diffs = append(diffs, "network: "+why+"; a private bridge network instead (bridge, host-local, portmap)")
	} else {
		n.From = file
	}
	for _, p := range plugins {
		pm := p.(map[string]any)
		switch pm["type"] {
		case "bridge", "ptp":
			if pm["type"] == "bridge" {
				pm["bridge"] = n.Bridge
			} else {
				n.Bridge = ""
			}
			pm["ipam"] = map[string]any{"type": "host-local", "ranges": []any{[]any{map[string]any{"subnet": n.Subnet.String()}}},
				"routes": []any{map[string]any{"dst": "0.0.0.0/0"}}, "dataDir": dataDir}
		}
		typ, _ := pm["type"].(string)
		if !pluginPresent(typ, binDirs) {
			return nil, diffs, fmt.Errorf("the CNI plugin %q is in none of the node's CNI bin dirs (%s)", typ, strings.Join(binDirs, ", "))
		}
	}
	out := map[string]any{"cniVersion": version, "name": n.Name, "plugins": plugins}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, diffs, err
	}
	if !n.Plain {
		diffs = append(diffs, fmt.Sprintf("network: the node's CNI chain from %s on a bridge and subnet of its own (%s, %s)", file, orPtp(n.Bridge), n.Subnet))
	} else {
		diffs[len(diffs)-1] += fmt.Sprintf(" (%s, %s)", n.Bridge, n.Subnet)
	}
	return append(b, '\n'), diffs, nil
}

func orPtp(bridge string) string {
	if bridge == "" {
		return "ptp"
	}
	return bridge
}

func pluginPresent(typ string, dirs []string) bool {
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, typ)); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// Candidates are the subnets a shadow picks from, in order:
// 10.234.0.0/24 … 10.234.255.0/24 (outside Kubernetes' and Docker's usual
// defaults).
func Candidates() []netip.Prefix {
	out := make([]netip.Prefix, 0, 256)
	for i := range 256 {
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 234, byte(i), 0}), 24))
	}
	return out
}

// FreeSubnet is the first candidate overlapping none of used.
func FreeSubnet(candidates, used []netip.Prefix) (netip.Prefix, error) {
	for _, c := range candidates {
		if !slices.ContainsFunc(used, c.Overlaps) {
			return c, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free subnet for the shadow's network: each of %s … %s overlaps an address, route or CNI config of the host", candidates[0], candidates[len(candidates)-1])
}

// UsedSubnets are the IPv4 subnets in use on the host: every interface's
// addresses, every route but the default ones, and every subnet named in
// the CNI configs of confDirs (a network with no pod yet has no address).
func UsedSubnets(confDirs ...string) ([]netip.Prefix, error) {
	var used []netip.Prefix
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("the host's addresses: %w", err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			used = append(used, p.Masked())
		}
	}
	routes, err := routes()
	if err != nil {
		return nil, err
	}
	used = append(used, routes...)
	for _, d := range confDirs {
		used = append(used, confSubnets(d)...)
	}
	return used, nil
}

// routes reads /proc/net/route (Iface Destination Gateway Flags RefCnt Use
// Metric Mask ...; addresses in host byte order hex), the default route left out.
func routes() ([]netip.Prefix, error) {
	data, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return nil, fmt.Errorf("the host's routes: %w", err)
	}
	var out []netip.Prefix
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[0] == "Iface" {
			continue
		}
		dst, err1 := strconv.ParseUint(f[1], 16, 32)
		mask, err2 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil || mask == 0 {
			continue
		}
		var d, m [4]byte
		binary.LittleEndian.PutUint32(d[:], uint32(dst))
		binary.LittleEndian.PutUint32(m[:], uint32(mask))
		bits, _ := net.IPMask(m[:]).Size()
		out = append(out, netip.PrefixFrom(netip.AddrFrom4(d), bits).Masked())
	}
	return out, nil
}

// confSubnets are the "subnet" values anywhere in dir's CNI configs.
func confSubnets(dir string) []netip.Prefix {
	var out []netip.Prefix
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(data) > 1<<20 {
			continue
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			walkSubnets(v, &out)
		}
	}
	return out
}

func walkSubnets(v any, out *[]netip.Prefix) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "subnet" {
				if p, err := netip.ParsePrefix(s); err == nil {
					*out = append(*out, p.Masked())
				}
				continue
			}
			walkSubnets(e, out)
		}
	case []any:
		for _, e := range x {
			walkSubnets(e, out)
		}
	}
}

// subnetClaim is the file in a shadow's state dir naming the subnet it
// took: shadows under other dirs (PODSTEP_SHADOW_DIR) see it there.
const subnetClaim = "podstep-subnet"

// pickSubnet chooses the shadow's subnet and claims it, under a lock that
// every shadow of the host takes for this (a flock on StateBase): two
// shadows started at once would otherwise both see the same subnet free
// until either's pod had an address, share it, and each one's teardown
// would remove the other's iptables chains. Used: the host's addresses and
// routes, the node's CNI configs, the other shadows' configs under the
// same base (others) and every shadow's claim.
func pickSubnet(l Layout, nodeConfDir string, others []string) (netip.Prefix, error) {
	if err := os.MkdirAll(StateBase, 0o711); err != nil {
		return netip.Prefix{}, fmt.Errorf("shadow state dir: %w", err)
	}
	f, err := os.Open(StateBase)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("shadow state dir: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return netip.Prefix{}, fmt.Errorf("lock %s: %w", StateBase, err)
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	used, err := UsedSubnets(append([]string{nodeConfDir, "/etc/cni/net.d"}, others...)...)
	if err != nil {
		return netip.Prefix{}, err
	}
	used = append(used, claimedSubnets(filepath.Base(l.State()))...)
	p, err := FreeSubnet(Candidates(), used)
	if err != nil {
		return p, err
	}
	if err := os.MkdirAll(l.State(), 0o711); err != nil {
		return p, fmt.Errorf("shadow state dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(l.State(), subnetClaim), []byte(p.String()+"\n"), 0o600); err != nil {
		return p, fmt.Errorf("claim subnet %s: %w", p, err)
	}
	return p, nil
}

// claimedSubnets are the subnets other shadows' state dirs claim (self
// left out); a killed shadow's claim holds until podstep cleanup removes
// its state dir.
func claimedSubnets(self string) []netip.Prefix {
	files, _ := filepath.Glob(filepath.Join(StateBase, "*", subnetClaim))
	var out []netip.Prefix
	for _, f := range files {
		if filepath.Base(filepath.Dir(f)) == self {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if p, err := netip.ParsePrefix(strings.TrimSpace(string(b))); err == nil {
			out = append(out, p)
		}
	}
	return out
}
