package csi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/podstep/podstep/internal/cri"
)

// Drivers are the CSI drivers of the node as the kubelet's CSI plugin
// knows them (its csiDrivers store, filled by plugin registration): the
// endpoints given with --csi-endpoint, else those registered in the
// registration directory. It hands out one recorded Client per driver. It
// is safe for concurrent use.
type Drivers struct {
	// Endpoints are the --csi-endpoint ones; they win over registrations.
	Endpoints Endpoints
	// RegistryDir is searched (once, on the first driver not in
	// Endpoints) as the kubelet's plugin watcher would have found it; ""
	// searches nothing.
	RegistryDir string
	// Timeout bounds each call (0 = Timeout, the kubelet's csiTimeout).
	Timeout time.Duration

	mu         sync.Mutex
	rec        *cri.Client
	discovered map[string]Registered
	notes      []string
	clients    map[string]*Client
}

// For returns drivers with d's endpoints, registry and timeout whose
// calls rec records, with clients of their own: one per engine (bench runs
// several at once, each recording its own pod's calls). nil stays nil.
func (d *Drivers) For(rec *cri.Client) *Drivers {
	if d == nil {
		return nil
	}
	return &Drivers{Endpoints: d.Endpoints, RegistryDir: d.RegistryDir, Timeout: d.Timeout, rec: rec}
}

// Endpoint returns driver's node socket and how it was found
// ("--csi-endpoint", or "registered in DIR"), or ok false.
func (d *Drivers) Endpoint(driver string) (endpoint, how string, ok bool) {
	if d == nil {
		return "", "", false
	}
	if ep, ok := d.Endpoints[driver]; ok {
		return ep, "--csi-endpoint", true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.discovered == nil && d.RegistryDir != "" {
		d.discovered, d.notes = Discover(context.Background(), d.RegistryDir, 5*time.Second)
	}
	if r, ok := d.discovered[driver]; ok {
		return r.Endpoint, "registered in " + d.RegistryDir + " (" + r.Socket + ")", true
	}
	return "", "", false
}

// Known lists the drivers podstep can call, sorted, for messages.
func (d *Drivers) Known() []string {
	if d == nil {
		return nil
	}
	d.Endpoint("") // discover once
	d.mu.Lock()
	defer d.mu.Unlock()
	set := map[string]bool{}
	for n := range d.Endpoints {
		set[n] = true
	}
	for n := range d.discovered {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Client returns the recorded client of driver (one per driver).
func (d *Drivers) Client(driver string) (*Client, error) {
	ep, _, ok := d.Endpoint(driver)
	if !ok {
		return nil, fmt.Errorf("driver name %s not found in the list of registered CSI drivers: %w", driver, ErrNoDriver)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.clients[driver]; ok {
		return c, nil
	}
	if d.rec == nil {
		return nil, errors.New("csi: no CRI client records the calls")
	}
	c, err := Dial(driver, ep, d.rec, d.Timeout)
	if err != nil {
		return nil, err
	}
	if d.clients == nil {
		d.clients = map[string]*Client{}
	}
	d.clients[driver] = c
	return c, nil
}

// Close closes every client.
func (d *Drivers) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, c := range d.clients {
		errs = append(errs, c.Close())
	}
	d.clients = nil
	return errors.Join(errs...)
}

// NotFoundHint says how to give podstep a driver it did not find.
func (d *Drivers) NotFoundHint(driver string) string {
	where := "no registration directory searched"
	if d != nil && d.RegistryDir != "" {
		where = "none registered in " + d.RegistryDir
	}
	known := "none"
	if k := d.Known(); len(k) > 0 {
		known = strings.Join(k, ", ")
	}
	if d != nil {
		d.mu.Lock()
		if len(d.notes) > 0 {
			where += "; " + strings.Join(d.notes, "; ")
		}
		d.mu.Unlock()
	}
	return fmt.Sprintf("podstep calls the CSI driver %s's node service as the kubelet does, but has no socket for it (%s; drivers known: %s): give --csi-endpoint %s=unix:///PATH/TO/csi.sock, or run where its node plugin is registered", driver, where, known, driver)
}
