package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// TestContainerResourceNames: the API server refuses a container resource
// name that is neither a standard one nor a valid extended one, so podstep
// does, at validation (exit 2), not later as an OutOf<name> admission.
func TestContainerResourceNames(t *testing.T) {
	for name, want := range map[string]string{
		"cpu":               "",
		"memory":            "",
		"ephemeral-storage": "",
		"hugepages-2Mi":     "",
		"example.com/gpu":   "",
		"nvidia.com/gpu":    "",
		"memroy":            `limits[memroy]: unsupported resource name "memroy"`,
		"gpu":               "unsupported resource name",
		"example.com/a b":   "invalid resource name",
		"requests.a.b/c":    "invalid extended resource name",
	} {
		t.Run(name, func(t *testing.T) {
			yaml := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    resources:\n      limits: {%q: 1Gi}\n      requests: {%q: 1Gi}\n", name, name)
			_, err := Parse("p.yaml", []byte(yaml))
			switch {
			case want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("error %v, want one with %q", err, want)
			}
		})
	}
}
