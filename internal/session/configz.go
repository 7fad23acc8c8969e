package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/steps"
)

// nodeSettings reads the kubelet configuration of the node the pod runs on
// (its configz, through the API server) and takes from it what that
// kubelet would use for the pod: cluster DNS and domain (the pod's
// resolv.conf, dns.go's configurer), cgroup driver (when the runtime does
// not report one), cgroup root, allowed unsafe sysctls and feature gates.
// A flag given wins. It fills o.From and returns one line saying what came
// from where, and whether it sent the request (the node is Ready); a
// configz that cannot be read (nodes/proxy denied, a kubelet that does
// not answer, a node that is not Ready) is one warning line, and the flags
// and defaults stay.
func (o *Options) nodeSettings(ctx context.Context, c *cluster.Client, node string, ready bool) (line string, asked bool) {
	if !ready {
		return fmt.Sprintf("podstep: warning: node %s is not Ready: its kubelet configuration (configz) is not read: cluster DNS, cluster domain, cgroup driver and cgroup root are podstep's flags and defaults", node), false
	}
	cfg, err := c.Configz(ctx, node)
	if err != nil {
		return fmt.Sprintf("podstep: warning: the kubelet configuration of node %s (configz): %v: cluster DNS, cluster domain, cgroup driver and cgroup root are podstep's flags and defaults", node, err), true
	}
	src := "configz of node " + node
	o.From = map[string]string{}
	var parts []string
	take := func(flag, setting string, has bool, value string, apply func()) {
		switch {
		case o.changed(flag):
			o.From[setting] = "--" + flag
			parts = append(parts, fmt.Sprintf("%s from --%s (the node's: %s)", setting, flag, orUnset(value, has)))
		case has:
			apply()
			o.From[setting] = src
			parts = append(parts, setting+" "+value)
		default:
			o.From[setting] = "default (" + src + " does not set it)"
			parts = append(parts, setting+" unset")
		}
	}
	take("cluster-dns", steps.SettingClusterDNS, len(cfg.ClusterDNS) > 0, strings.Join(cfg.ClusterDNS, ","),
		func() { o.ClusterDNS = cfg.ClusterDNS })
	take("cluster-domain", steps.SettingClusterDomain, cfg.ClusterDomain != "", cfg.ClusterDomain,
		func() { o.ClusterDomain = cfg.ClusterDomain })
	take("cgroup-driver", steps.SettingCgroupDriver, cfg.CgroupDriver == "systemd" || cfg.CgroupDriver == "cgroupfs", cfg.CgroupDriver,
		func() { o.CgroupDriver, o.CgroupDriverSet = cfg.CgroupDriver, true })
	take("cgroup-root", steps.SettingCgroupRoot, cfg.CgroupRoot != "", cfg.CgroupRoot,
		func() { o.CgroupRoot = cfg.CgroupRoot })
	if !o.changed("allowed-unsafe-sysctls") && len(cfg.AllowedUnsafeSysctls) > 0 {
		o.UnsafeSysctls = cfg.AllowedUnsafeSysctls
		parts = append(parts, "allowedUnsafeSysctls "+strings.Join(cfg.AllowedUnsafeSysctls, ","))
	}
	if g := cfg.KnownGates(); g != "" && !o.changed("feature-gates") {
		if gates, err := gate.Parse(g); err == nil {
			o.FeatureGates, o.Gates = g, gates
			parts = append(parts, "featureGates "+g)
		}
	}
	line = fmt.Sprintf("podstep: node %s's kubelet (configz): %s", node, strings.Join(parts, ", "))
	if cfg.CgroupsPerQOS != nil && *cfg.CgroupsPerQOS && !o.CgroupsPerQOS {
		line += "; its cgroupsPerQOS is not taken (--cgroups-per-qos: podstep's pod under the kubelet's kubepods tree is an orphan its housekeeping destroys, cleanupOrphanedPodCgroups)"
	}
	if cfg.PodLogsDir != "" {
		line += fmt.Sprintf("; its pod logs are in %s (its root dir is a flag configz does not show); podstep's are its own: --root-dir %s, --log-dir %s", cfg.PodLogsDir, o.RootDir, o.LogDir)
	}
	return line, true
}

func (o *Options) changed(flag string) bool {
	return o.Changed != nil && o.Changed(flag)
}

func orUnset(v string, has bool) string {
	if !has {
		return "unset"
	}
	return v
}
