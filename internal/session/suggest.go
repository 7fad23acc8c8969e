package session

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/steps"
)

// FlagError is the usage error of a flag cobra could not parse: for an
// unknown flag, with the flags of the command whose names are close, as
// cobra suggests commands (SuggestionsMinimumDistance 2, or a prefix).
func FlagError(err error, flags *pflag.FlagSet) error {
	msg := err.Error()
	if m := invalidArgRE().FindStringSubmatch(msg); m != nil {
		if e := badValue(m[1], m[2], flags); e != nil {
			return e
		}
	}
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return Usagef("%v", err)
	}
	var near []string
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := distance(name, f.Name); d <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return Usagef("%v", err)
	}
	sort.Strings(near)
	return Usagef("%v\n\nDid you mean this?\n\t%s", err, strings.Join(near, "\n\t"))
}

// distance is the Levenshtein distance of a and b, case-insensitive (as
// cobra's ld).
func distance(a, b string) int {
	ra, rb := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// BreakCompletion completes --break's value, a comma-separated list of
// stages and step names: the stages (teardown too) and step kinds the
// last element could be, each after the elements already given; after a
// per-container kind, KIND/ (its container, or * for every one).
func BreakCompletion(toComplete string) []string {
	done, last := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	add := func(v string) {
		if strings.HasPrefix(v, last) && !strings.Contains(","+done, ","+v+",") && !slices.Contains(out, done+v) {
			out = append(out, done+v)
		}
	}
	for _, st := range append(steps.Stages, steps.StageTeardown) {
		add(string(st))
	}
	for _, k := range steps.Kinds() {
		if k.PerContainer() {
			add(k.String() + "/*")
			continue
		}
		add(k.String())
	}
	return out
}

// invalidArgRE is pflag's error for a value that does not parse:
// invalid argument "VALUE" for "-s, --name" flag: ...
var invalidArgRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^invalid argument "((?:[^"\\]|\\.)*)" for "(?:-[^,]*, )?--([^"]+)" flag: `)
})

// badValue says what a value of the flag looks like, instead of the
// parser's text (strconv.ParseFloat: parsing "fast": invalid syntax):
// for a duration given without a unit, the duration meant ("5" → 5s).
// nil: a flag it knows nothing better of.
func badValue(quoted, name string, flags *pflag.FlagSet) error {
	f := flags.Lookup(name)
	if f == nil {
		return nil
	}
	v, err := strconv.Unquote(`"` + quoted + `"`)
	if err != nil {
		v = quoted
	}
	expected := ""
	if b, ok := flagBounds[flags.Name()+" "+name]; ok {
		expected = b.expected
	} else if b, ok := flagBounds[name]; ok {
		expected = b.expected
	}
	switch f.Value.Type() {
	case "duration":
		if expected == "" {
			expected = "a duration"
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
			return Usagef("--%s %q: a duration needs a unit; expected %s, such as %ss (or %sms, %sm)", name, v, expected, v, v, v)
		}
		return Usagef("--%s %q: not a duration; expected %s, written with a unit, such as 30s, 500ms or 2m", name, v, expected)
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		if expected == "" {
			expected = "a whole number"
		}
		return Usagef("--%s %q: not a whole number; expected %s", name, v, expected)
	case "float32", "float64":
		if expected == "" {
			expected = "a number"
		}
		return Usagef("--%s %q: not a number; expected %s", name, v, expected)
	}
	return nil
}
