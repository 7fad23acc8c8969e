package main

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=..."
// (hack/release.sh); a `go install .../cmd/podstep@vX.Y.Z` build takes its
// module's tag instead (installedVersion).
// (-X takes only a variable initialised to a constant.)
var version = devVersion

const devVersion = "0.1.0-dev"

// podstepVersion is the version podstep says: the stamped one, else the
// module's release tag (installedVersion). Computed on first use, not in
// an init: reading the build info costs every command ~20 KB in ~280
// allocations (issue 36).
var podstepVersion = sync.OnceValue(func() string {
	if version == devVersion {
		return installedVersion(devVersion)
	}
	return version
})

// installedVersion is the main module's version when it is a release tag
// (go install of a tagged version), else dev: a pseudo-version or a dirty
// tree is not a release.
func installedVersion(dev string) string {
	if bi, ok := debug.ReadBuildInfo(); ok && releaseTag().MatchString(bi.Main.Version) {
		return bi.Main.Version
	}
	return dev
}

var releaseTag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^v\d+\.\d+\.\d+$`) })

// kubeletVersion is the kubelet whose path podstep mirrors.
const kubeletVersion = "v1.33 (seeds) / v1.37 (reference traces)"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print podstep's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cri := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, d := range bi.Deps {
					if d.Path == "k8s.io/cri-api" {
						cri = d.Version
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "podstep %s\nkubelet path: %s\ncri-api: %s (runtime.v1)\ngo: %s %s/%s\n",
				podstepVersion(), kubeletVersion, cri, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
