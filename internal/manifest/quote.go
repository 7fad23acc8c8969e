package manifest

import (
	"reflect"
	"unicode/utf8"
)

// Values from the input are shown in messages, and the input may be
// hostile: a 3 MiB name would make a 3 MiB message. A value longer than
// maxArgLen bytes is shown cut to shortLen bytes (every text podstep itself
// puts in a message is shorter than maxArgLen).
const (
	maxArgLen = 300
	shortLen  = 100
)

// shorten cuts s to at most n bytes (on a rune boundary), marking the cut
// with "...".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// shortArgs returns args with every string longer than maxArgLen shortened
// to shortLen.
func shortArgs(args []any) []any {
	var out []any // a copy, made on the first long string
	for i, a := range args {
		if v := reflect.ValueOf(a); v.Kind() == reflect.String && v.Len() > maxArgLen {
			if out == nil {
				out = append([]any(nil), args...)
			}
			out[i] = shorten(v.String(), shortLen)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// shortText shortens s when it is longer than maxArgLen.
func shortText(s string) string {
	if len(s) > maxArgLen {
		return shorten(s, shortLen)
	}
	return s
}
