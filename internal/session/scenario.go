package session

import (
	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/scenario"
)

// validateScenario checks --scenario: one source of the pod, a name of the
// catalogue (exit 2 otherwise, with the names close to it), and takes the
// scenario's feature gates when --feature-gates is not given. It sets File
// to the scenario's name in messages and recordings ("scenario:NAME").
func (o *Options) validateScenario() error {
	if o.Scenario == "" {
		return nil
	}
	switch {
	case o.File != "" && o.File != scenario.File(o.Scenario):
		return Usagef("--scenario and -f/--filename both given: the pod comes from a built-in scenario or from a manifest, not both")
	case o.Pod != "":
		return Usagef("--scenario and --pod both given: the pod comes from a built-in scenario or from the API server, not both")
	}
	s, err := scenario.Get(o.Scenario)
	if err != nil {
		return Usagef("--scenario: %v", err)
	}
	if o.FeatureGates == "" {
		o.FeatureGates = s.Expect.FeatureGates
	}
	o.File = scenario.File(o.Scenario)
	return nil
}

// scenarioBundle parses the scenario's manifest (embedded in podstep).
func (o *Options) scenarioBundle() (*manifest.Bundle, error) {
	s, err := scenario.Get(o.Scenario)
	if err != nil {
		return nil, Usagef("--scenario: %v", err)
	}
	return manifest.Parse(scenario.File(o.Scenario), s.Manifest)
}
