package cri

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// WellKnownEndpoints are the sockets crictl tries, in its order.
var WellKnownEndpoints = []string{
	"unix:///run/containerd/containerd.sock",
	"unix:///run/crio/crio.sock",
	"unix:///var/run/cri-dockerd.sock",
}

// Target turns a CRI endpoint (unix:///path, /path, or tcp://host:port)
// into a gRPC dial target.
func Target(endpoint string) (string, error) {
	if endpoint == "" {
		return "", fmt.Errorf("empty runtime endpoint")
	}
	if strings.HasPrefix(endpoint, "/") {
		return "unix://" + endpoint, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("parse endpoint %q: %w", endpoint, err)
	}
	switch u.Scheme {
	case "unix":
		p := u.Path
		if p == "" {
			p = u.Host + u.Opaque
		}
		return "unix://" + p, nil
	case "tcp":
		return "dns:///" + u.Host, nil
	default:
		return "", fmt.Errorf("endpoint %q: unsupported scheme %q (want unix:// or tcp://)", endpoint, u.Scheme)
	}
}

// SocketPath returns the filesystem path of a unix endpoint, or "".
func SocketPath(endpoint string) string {
	t, err := Target(endpoint)
	if err != nil || !strings.HasPrefix(t, "unix://") {
		return ""
	}
	return strings.TrimPrefix(t, "unix://")
}

// Probe reports whether a runtime answers Version at endpoint within d.
// The probe is not recorded: it decides which runtime to use, it is not
// part of the pod's story.
func Probe(ctx context.Context, endpoint string, d time.Duration) error {
	if p := SocketPath(endpoint); p != "" {
		if _, err := os.Stat(p); err != nil {
			return err
		}
	}
	c, err := Dial(endpoint, "", Options{Timeout: d})
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }() // a probe: only Version's answer counts
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err = c.rt.Version(ctx, versionRequest())
	return err
}
