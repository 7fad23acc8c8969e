package session

import (
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// flagBound is the range of a numeric flag, by name, on every command that
// has it (commands check what depends on other flags themselves).
type flagBound struct {
	min, max float64 // durations in seconds
	expected string
}

// flagBounds: a value outside is exit 2 before anything is read or sent.
// Each keeps what a person might mean (a year of grace period, a day of
// timeout) and refuses what would overflow, spin or never end.
var flagBounds = map[string]flagBound{
	"timeout":              {0.001, 86400, "a duration from 1ms to 24h"},
	"pull-timeout":         {0.001, 86400, "a duration from 1ms to 24h"},
	"grace-period":         {-1, 365 * 86400, "-1 (the pod's own) or seconds from 0 to a year"},
	"poll-interval":        {0.001, 3600, "a duration from 1ms to 1h"},
	"init-timeout":         {0.001, 7 * 86400, "a duration from 1ms to 7 days"},
	"ready-timeout":        {0.001, 7 * 86400, "a duration from 1ms to 7 days"},
	"settle":               {0, 3600, "a duration from 0 to 1h"},
	"max-restarts":         {-1, 1e6, "-1 (no limit) or a count from 0 to 1000000"},
	"max-pods":             {0, 1e6, "a pod count from 0 to 1000000"},
	"backoff-scale":        {1e-9, 1, "a factor in (0, 1], e.g. 0.01"},
	"min-change":           {0, 3600, "a duration from 0 to 1h"},
	"request-timeout":      {0.001, 86400, "a duration from 1ms to 24h"},
	"wait":                 {0, 86400, "a duration from 0 to 24h"},
	"run-timeout":          {0.001, 7 * 86400, "a duration from 1ms to 7 days"},
	"concurrency":          {1, 10000, "a count of runners from 1 to 10000"},
	"image-config-timeout": {0.001, 600, "a duration from 1ms to 10m"},
	// A command's own range for a flag another command has too, by
	// "COMMAND FLAG" (the command's flag set is named after it).
	"bench concurrency": {1, BenchMaxConcurrency, "a count of pods at once from 1 to " + strconv.Itoa(BenchMaxConcurrency)},
}

// BenchMaxConcurrency bounds bench's --concurrency and --scale: more pods
// at once than a node's default --max-pods (110) says nothing about a
// node. internal/bench takes it from here.
const BenchMaxConcurrency = 110

// CheckFlagBounds checks a command's numeric flags against flagBounds
// (every command's, before it runs: cmd/podstep's root): the one place
// their ranges are stated. flags is the command's own flag set (cobra
// names it after the command), for a "COMMAND FLAG" entry.
func CheckFlagBounds(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		b, ok := flagBounds[flags.Name()+" "+f.Name]
		if !ok {
			b, ok = flagBounds[f.Name]
		}
		if !ok || err != nil {
			return
		}
		var v float64
		switch f.Value.Type() {
		case "duration":
			d, perr := time.ParseDuration(f.Value.String())
			if perr != nil {
				return
			}
			v = d.Seconds()
		case "int", "int64", "float64":
			var perr error
			if v, perr = strconv.ParseFloat(f.Value.String(), 64); perr != nil {
				return
			}
		default:
			return
		}
		if math.IsNaN(v) || v < b.min || v > b.max {
			err = Usagef("--%s %s: expected %s", f.Name, f.Value.String(), b.expected)
		}
	})
	return err
}
