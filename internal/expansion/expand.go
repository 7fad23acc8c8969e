// Package expansion expands $(VAR) references the way the kubelet does for
// env values, command, args, exec probe commands and subPathExpr: it
// mirrors k8s.io/kubernetes/third_party/forked/golang/expansion (Expand,
// MappingFuncFor, tryReadVariableName).
//
// The rules, which are the kubelet's:
//   - "$(NAME)" is replaced by mapping(NAME);
//   - "$$" is an escaped "$": it gives "$" and what follows is not read as
//     a reference ("$$(A)" gives "$(A)");
//   - an unterminated "$(" is copied as is;
//   - a "$" followed by any other character is copied with that character,
//     and a "$" at the end of the input is copied.
package expansion

import (
	"strings"
	"unicode/utf8"
)

// Expand replaces the $(NAME) references in input with mapping(NAME),
// following the rules in the package doc (expansion.Expand).
func Expand(input string, mapping func(name string) string) string {
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		b.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariableName(input[cursor+1:])
		if isVar {
			b.WriteString(mapping(read))
		} else {
			b.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return b.String() + input[checkpoint:]
}

// readVariableName mirrors tryReadVariableName: input follows a "$"; it
// returns what to write (the name when isVar), whether it is a reference,
// and how many bytes of input it consumed.
func readVariableName(input string) (read string, isVar bool, advance int) {
	r, size := utf8.DecodeRuneInString(input)
	switch r {
	case '$':
		return input[:size], false, size
	case '(':
		if end := strings.IndexByte(input[1:], ')'); end >= 0 {
			return input[1 : end+1], true, end + 2
		}
		return "$(", false, 1
	default:
		// string(r) as the kubelet writes it: an invalid UTF-8 byte after
		// the "$" becomes U+FFFD.
		return "$" + string(r), false, size
	}
}

// MappingFuncFor returns the mapping the kubelet uses for env values,
// command and args (expansion.MappingFuncFor): lookup's value when it knows
// the name, else the reference left as written, "$(NAME)".
func MappingFuncFor(lookup func(name string) (string, bool)) func(string) string {
	return func(name string) string {
		if v, ok := lookup(name); ok {
			return v
		}
		return "$(" + name + ")"
	}
}
