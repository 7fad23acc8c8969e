package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

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
				version, kubeletVersion, cri, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
