package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RemoveHostDirs: a fleet runner's dirs go, up to and including the host
// dir, each only when empty (in the runner the host dir is its mount
// point, which stays); other nodes' dirs stay, silently; a pod left stays
// with its parents and is named once.
func TestRemoveHostDirs(t *testing.T) {
	for _, tt := range []struct {
		name     string
		podLeft  bool // a pod dir is left under root/pods
		noFlag   bool // no --fleet-host-dir
		other    bool // another node's runner has its dir in the host dir
		want     []string
		wantWarn string
	}{
		{name: "all empty", want: nil},
		{name: "not a runner", noFlag: true, want: []string{"fleet", "fleet/n1", "fleet/n1/logs", "fleet/n1/root", "fleet/n1/root/pods", "fleet/other"}},
		{name: "a pod left", podLeft: true, want: []string{"fleet", "fleet/n1", "fleet/n1/root", "fleet/n1/root/pods", "fleet/n1/root/pods/uid"},
			wantWarn: "fleet/n1/root/pods on the node: not empty"},
		{name: "another node's dir", other: true, want: []string{"fleet", "fleet/other"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			host := filepath.Join(tmp, "fleet")
			dirs := []string{"n1/root/pods", "n1/logs"}
			if tt.podLeft {
				dirs = append(dirs, "n1/root/pods/uid")
			}
			if tt.noFlag || tt.other {
				dirs = append(dirs, "other")
			}
			for _, d := range dirs {
				if err := os.MkdirAll(filepath.Join(host, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			o := Options{RootDir: filepath.Join(host, "n1", "root"), LogDir: filepath.Join(host, "n1", "logs"), FleetHostDir: host}
			if tt.noFlag {
				o.FleetHostDir = ""
			}
			var stderr bytes.Buffer
			o.RemoveHostDirs(&stderr)

			var got []string
			_ = filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
				if rel, _ := filepath.Rel(tmp, p); err == nil && d.IsDir() && strings.HasPrefix(rel, "fleet") {
					got = append(got, rel)
				}
				return nil
			})
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("left %q, want %q", got, tt.want)
			}
			warn := stderr.String()
			switch {
			case tt.wantWarn == "" && warn != "":
				t.Errorf("stderr %q, want nothing", warn)
			case tt.wantWarn != "" && (!strings.Contains(warn, tt.wantWarn) || strings.Count(warn, "\n") != 1):
				t.Errorf("stderr %q, want one line with %q", warn, tt.wantWarn)
			}
		})
	}
}
