package main

import "testing"

// TestReleaseTag: only a release tag becomes the version of a go install'ed
// podstep; pseudo-versions and dirty trees stay the dev version.
func TestReleaseTag(t *testing.T) {
	for v, want := range map[string]bool{
		"v0.2.0": true, "v1.10.3": true, "(devel)": false, "": false,
		"v0.0.0-20261125230000-abcdef123456": false, "v0.2.0+dirty": false, "v0.2.1-0.20261125230000-abcdef123456": false,
	} {
		if got := releaseTag().MatchString(v); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}
