package explain

import (
	"regexp"
	"sync"
)

// Regexp is an entry's pattern, compiled on first use rather than in the
// package's init: every podstep command links this package and runs its
// inits, and compiling the table's expressions there cost ~50 KB on each
// (issue 36).
type Regexp struct {
	expr string
	re   func() *regexp.Regexp
}

// pattern returns expr as a Regexp; it panics on first use if expr does
// not compile (TestTable uses every entry's).
func pattern(expr string) *Regexp {
	return &Regexp{expr: expr, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
}

// MatchString reports whether s contains a match of the expression.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// String is the expression's source text.
func (r *Regexp) String() string { return r.expr }
