package csi

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Endpoints maps CSI driver names to their node sockets (unix://PATH), as
// --csi-endpoint DRIVER=unix://PATH gives them (repeatable). It is a
// pflag.Value.
type Endpoints map[string]string

// ParseEndpoint reads one DRIVER=unix://PATH: DRIVER a CSI driver name as
// the API server accepts it for a CSIDriver (a DNS subdomain of at most 63
// characters), PATH an absolute path.
func ParseEndpoint(s string) (driver, endpoint string, err error) {
	driver, endpoint, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("%q: expected DRIVER=unix://PATH (a CSI driver name, '=', its node socket)", s)
	}
	if driver == "" {
		return "", "", fmt.Errorf("%q: empty driver name; expected DRIVER=unix://PATH", s)
	}
	if errs := validation.IsDNS1123Subdomain(strings.ToLower(driver)); len(errs) > 0 || len(driver) > 63 {
		return "", "", fmt.Errorf("%q: driver name %q is not a CSI driver name: expected at most 63 characters, alphanumerics, '-' and '.', beginning and ending with an alphanumeric", s, driver)
	}
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		return "", "", fmt.Errorf("%q: endpoint %q: expected unix://PATH (CSI drivers serve a unix socket)", s, endpoint)
	}
	if !filepath.IsAbs(path) {
		return "", "", fmt.Errorf("%q: socket path %q is not absolute; expected unix:///ABSOLUTE/PATH", s, path)
	}
	return driver, "unix://" + filepath.Clean(path), nil
}

// String lists the endpoints as DRIVER=ENDPOINT, comma-separated, sorted.
func (e Endpoints) String() string {
	out := make([]string, 0, len(e))
	for d, ep := range e {
		out = append(out, d+"="+ep)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Set adds one DRIVER=unix://PATH (a second one for the same driver is an
// error).
func (e Endpoints) Set(s string) error {
	d, ep, err := ParseEndpoint(s)
	if err != nil {
		return err
	}
	if old, ok := e[d]; ok {
		return fmt.Errorf("%q: driver %s given twice (also %s); expected one endpoint per driver", s, d, old)
	}
	e[d] = ep
	return nil
}

// Type is the flag's type in help.
func (Endpoints) Type() string { return "DRIVER=unix://PATH" }
