package imageconfig

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
)

// Modes of --image-config.
const (
	ModeAuto = "auto" // read configs from registries that answer
	ModeOff  = "off"  // read none: today's assumptions
)

// EnvMode is the environment variable that sets the mode when
// --image-config is not given (the tests set it to off: their outputs must
// not depend on a registry answering).
const EnvMode = "PODSTEP_IMAGE_CONFIG"

// Flags are the flags of the simulated runtime's image config reads.
type Flags struct {
	Mode     string
	Timeout  time.Duration
	Insecure []string
	NoCache  bool
}

// AddFlags binds them.
func (fl *Flags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&fl.Mode, "image-config", ModeAuto, "on the simulated runtime, read each pulled image's config (entrypoint, cmd, user) from its registry with the pull's credentials: auto (when a registry answers; else the simulator assumes, as with off) or off (env "+EnvMode+" when not given)")
	f.DurationVar(&fl.Timeout, "image-config-timeout", DefaultTimeout, "the longest one image config read may take (a registry that hangs costs this once, with a warning)")
	f.StringSliceVar(&fl.Insecure, "image-config-insecure", nil, "registries (HOST[:PORT]) whose image configs may be read over plain HTTP, besides loopback ones")
	f.BoolVar(&fl.NoCache, "image-config-no-cache", false, "keep read image configs in memory only, not in the cache dir ("+cacheDirDoc+")")
}

const cacheDirDoc = "$XDG_CACHE_HOME/podstep/image-config, else ~/.cache/podstep/image-config"

// Fetcher is the Fetcher the flags ask for: nil when off. given says the
// user gave --image-config (else EnvMode may turn it off).
func (fl *Flags) Fetcher(given bool) (*Fetcher, error) {
	mode := fl.Mode
	if !given {
		if v := os.Getenv(EnvMode); v != "" {
			mode = v
		}
	}
	switch mode {
	case ModeOff:
		return nil, nil
	case ModeAuto, "":
	default:
		return nil, fmt.Errorf("--image-config %q: expected %s or %s", mode, ModeAuto, ModeOff)
	}
	if fl.Timeout <= 0 {
		return nil, fmt.Errorf("--image-config-timeout %s: expected a positive duration", fl.Timeout)
	}
	o := Options{Timeout: fl.Timeout, Insecure: fl.Insecure}
	if !fl.NoCache {
		o.CacheDir = DefaultCacheDir()
	}
	return New(o), nil
}
