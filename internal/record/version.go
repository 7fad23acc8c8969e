package record

import (
	"context"
	"time"

	"github.com/podstep/podstep/internal/cri"
)

// RuntimeVersion asks the runtime at endpoint its name and version for a
// header (Runtime.Name, Version, APIVersion), on a connection of its own,
// so that the run's calls stay as they are. A runtime that does not answer
// leaves them empty.
func RuntimeVersion(ctx context.Context, endpoint string) (name, ver, api string) {
	c, err := cri.Dial(endpoint, "", cri.Options{Timeout: 2 * time.Second})
	if err != nil {
		return "", "", ""
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		return "", "", ""
	}
	return v.GetRuntimeName(), v.GetRuntimeVersion(), v.GetRuntimeApiVersion()
}
