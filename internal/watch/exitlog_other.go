//go:build !linux

package watch

import (
	"fmt"
	"os"
)

// openBeneath is Linux's (exitlog_linux.go): the proxy reads a container's
// log only on a Linux node; elsewhere (a replay on macOS) there is none.
func openBeneath(root, rel string) (*os.File, error) {
	return nil, fmt.Errorf("read %s/%s: a container's log is read only on a Linux node", root, rel)
}
