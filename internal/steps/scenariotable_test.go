package steps

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// runtimeColumns are the scenario table's runtime columns (docs/scenarios.md), by the
// .expect files' runtimes keys.
var runtimeColumns = []struct{ key, header string }{
	{"containerd-1.6", "containerd 1.6"},
	{"containerd-2", "containerd 2.4.2"},
}

// scenarioTable is the page that holds the scenario table.
const scenarioTable = "docs/scenarios.md"

// TestScenarioTableMatchesExpect checks the scenario table of docs/scenarios.md against
// internal/scenario/data: a row per scenario and a scenario per row, and in each
// runtime column the verdict the .expect file gives that runtime (pass
// unless its runtimes block says refused or n.a.), which is what
// TestScenariosOnContainerd asserts and logs on that runtime.
func TestScenarioTableMatchesExpect(t *testing.T) {
	data, err := os.ReadFile(repoFile(scenarioTable))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	head := "| scenario | what happens | " + runtimeColumns[0].header + " | " + runtimeColumns[1].header + " |"
	i := strings.Index(text, head)
	if i < 0 {
		t.Fatalf("%s has no scenario table with runtime columns (%q)", scenarioTable, head)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(text[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("row %q: want 4 cells, got %d", line, len(cells))
		}
		rows[strings.Trim(strings.TrimSpace(cells[0]), "`")] = cells
	}
	files, _ := filepath.Glob(repoFile("internal/scenario/data/*.expect"))
	sort.Strings(files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".expect")
		row, ok := rows[name]
		if !ok {
			t.Errorf("scenario %s has no row in the table of %s", name, scenarioTable)
			continue
		}
		delete(rows, name)
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var x struct {
			Containerd string                     `json:"containerd"`
			Runtimes   map[string]json.RawMessage `json:"runtimes"`
		}
		if err := yaml.Unmarshal(raw, &x); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for col, rc := range runtimeColumns {
			want := "pass"
			if x.Containerd != "" {
				want = "n.a."
			}
			if r, ok := x.Runtimes[rc.key]; ok {
				var v struct {
					Verdict string `json:"verdict"`
				}
				if err := json.Unmarshal(r, &v); err != nil {
					t.Fatalf("%s runtimes.%s: %v", f, rc.key, err)
				}
				switch v.Verdict {
				case "", "pass":
				case "refused":
					want = "refused as the kubelet"
				case "n.a.":
					want = "n.a."
				default:
					t.Errorf("%s runtimes.%s.verdict %q: expected pass, refused or n.a.", f, rc.key, v.Verdict)
				}
			}
			if cell := strings.TrimSpace(row[2+col]); !strings.HasPrefix(cell, want) {
				t.Errorf("%s row %s, column %s: %q, want it to start with %q (from %s)", scenarioTable, name, rc.header, cell, want, filepath.Base(f))
			}
		}
	}
	for name := range rows {
		t.Errorf("%s row %s names no internal/scenario/data/%s.yaml", scenarioTable, name, name)
	}
}
