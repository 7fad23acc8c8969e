package cluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/cluster/kube"
	"github.com/podstep/podstep/internal/gate"
)

// NodeConfig is what podstep uses of a node's kubelet configuration, as
// the kubelet's configz endpoint gives it (KubeletConfiguration v1beta1
// field names, pkg/kubelet/apis/config). The kubelet's --root-dir is a
// flag, not a field of it: configz does not say it.
type NodeConfig struct {
	ContainerRuntimeEndpoint string          `json:"containerRuntimeEndpoint"`
	ImageServiceEndpoint     string          `json:"imageServiceEndpoint"`
	CgroupDriver             string          `json:"cgroupDriver"`
	ClusterDNS               []string        `json:"clusterDNS"`
	ClusterDomain            string          `json:"clusterDomain"`
	MaxPods                  int64           `json:"maxPods"`
	AllowedUnsafeSysctls     []string        `json:"allowedUnsafeSysctls"`
	FeatureGates             map[string]bool `json:"featureGates"`
	CgroupsPerQOS            *bool           `json:"cgroupsPerQOS"`
	CgroupRoot               string          `json:"cgroupRoot"`
	PodLogsDir               string          `json:"podLogsDir"`
}

// ParseConfigz reads the body of /api/v1/nodes/NAME/proxy/configz: the
// kubelet's {"kubeletconfig": {...}} (pkg/kubelet/server/server.go
// InstallDebuggingHandlers → configz.InstallHandler).
func ParseConfigz(body []byte) (*NodeConfig, error) {
	var z struct {
		KubeletConfig *NodeConfig `json:"kubeletconfig"`
	}
	if err := yaml.Unmarshal(body, &z); err != nil {
		return nil, fmt.Errorf("configz: %w", err)
	}
	if z.KubeletConfig == nil {
		return nil, fmt.Errorf("configz: no kubeletconfig object in the answer")
	}
	return z.KubeletConfig, nil
}

// ReadConfigz reads node's kubelet configuration through the API server's
// node proxy (get nodes/proxy), as `kubectl get --raw
// /api/v1/nodes/NAME/proxy/configz` does, within 10 s. classify turns a
// request's client-go error into the caller's (access denied, unreachable);
// an answer that is not a kubelet configuration is ParseConfigz's error. The
// one implementation: run --pod (Client.Configz) and the fleet's runners
// use it.
func ReadConfigz(ctx context.Context, api kube.API, node string, classify func(error) error) (*NodeConfig, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := api.Raw(ctx, "/api/v1/nodes", node, "proxy", "configz")
	if err != nil {
		return nil, classify(err)
	}
	return ParseConfigz(body)
}

// Configz is ReadConfigz with the client's errors: an *AccessError when
// nodes/proxy is denied, an *UnreachableError, or another error (a node
// whose kubelet does not answer gives the API server's 503).
func (c *Client) Configz(ctx context.Context, node string) (*NodeConfig, error) {
	return ReadConfigz(ctx, c.API, node, func(err error) error {
		return c.classify(err, "get", "nodes/proxy", "", node+"/configz")
	})
}

// KnownGates are the node's feature gates that podstep honours, as
// --feature-gates takes them ("A=true,B=false", sorted): the others do not
// change what podstep replays, and a locked gate only at its locked value.
func (c *NodeConfig) KnownGates() string {
	known := map[string]bool{}
	for _, n := range gate.Names() {
		known[n] = true
	}
	var out []string
	for n, v := range c.FeatureGates {
		kv := n + "=" + strconv.FormatBool(v)
		if _, err := gate.Parse(kv); known[n] && err == nil {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
