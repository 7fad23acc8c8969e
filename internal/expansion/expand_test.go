package expansion

import "testing"

// TestExpand is the kubelet's escaping rules, once: every place podstep
// expands $(VAR) (env values, command, args, exec probe commands,
// subPathExpr) goes through Expand.
func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b", "EMPTY": "", "PORT": "8080"}
	mapping := MappingFuncFor(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(B)z", "xaybz"},
		{"a$(PORT)b$(PORT)", "a8080b8080"},
		{"multi$(A)$(A)$(A)", "multiaaa"},
		{"curl localhost:$(PORT)/", "curl localhost:8080/"},
		// An unknown variable is left as written.
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$()", "$()"},
		{"$(EMPTY)x", "x"},
		// "$$" escapes the "$".
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$$$$(A)", "$$(A)"},
		{"echo $(A) $$HOME", "echo a $HOME"},
		// Unterminated references are copied.
		{"$(A", "$(A"},
		{"$(A)$(UNDEF", "a$(UNDEF"},
		{"$(A $(B)", "$(A $(B)"},
		{"$($(PORT))", "$($(PORT))"},
		// Any other "$" is copied, with what follows.
		{"$A", "$A"},
		{"cost $5", "cost $5"},
		{"$", "$"},
		{"a$", "a$"},
		{"$(A)$", "a$"},
		{"(A)", "(A)"},
		{"$é$(A)", "$éa"},
		// tryReadVariableName writes string(rune): a byte that is not
		// UTF-8 after a "$" becomes U+FFFD.
		{"$\xff$(A)", "$\uFFFDa"},
	}
	for _, tc := range tests {
		if got := Expand(tc.in, mapping); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestExpandMapping checks Expand hands the mapping every reference, known
// or not (ExpandContainerVolumeMounts relies on it to find missing values).
func TestExpandMapping(t *testing.T) {
	var seen []string
	got := Expand("$(A)/$(B)/$$(C)/$(D", func(name string) string {
		seen = append(seen, name)
		return "<" + name + ">"
	})
	if got != "<A>/<B>/$(C)/$(D" {
		t.Errorf("Expand = %q", got)
	}
	if len(seen) != 2 || seen[0] != "A" || seen[1] != "B" {
		t.Errorf("mapping called with %q, want [A B]", seen)
	}
}
