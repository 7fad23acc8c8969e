package render

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// nbHyphen stands in for '-' while ansi.Wrap runs: it always breaks after
// a hyphen, and "back-off", "post-start" or a path should stay whole.
const nbHyphen = "\u2011"

// Wrap breaks plain text into lines of at most w cells (w < 1 counts as 1)
// at spaces, with ansi.Wrap. Each line of s is a paragraph: its runs of
// spaces and tabs count as one space, and an empty one stays an empty
// line. Words longer than w are cut.
func Wrap(s string, w int) []string {
	w = max(w, 1)
	paras := strings.Split(s, "\n")
	for i, p := range paras {
		paras[i] = strings.ReplaceAll(strings.Join(strings.Fields(p), " "), "-", nbHyphen)
	}
	out := ansi.Wrap(strings.Join(paras, "\n"), w, "")
	return strings.Split(strings.ReplaceAll(out, nbHyphen, "-"), "\n")
}
