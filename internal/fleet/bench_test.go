package fleet

import (
	"fmt"
	"io"
	"testing"
)

// BenchmarkReport200 is the bar "the table and JSON for 200 nodes print in
// ≤ 1 s after the last result": the analysis, the table and the JSON over
// 200 nodes' real run outputs (testdata: five alike, one odd, one slow).
func BenchmarkReport200(b *testing.B) {
	src := []*Result{load(b, "node-a"), load(b, "node-b"), load(b, "node-c"), load(b, "node-d"), load(b, "node-e"), load(b, "node-f")}
	results := make([]*Result, 200)
	for i := range results {
		r := *src[i%len(src)]
		r.Node = fmt.Sprintf("node-%03d", i)
		results[i] = &r
	}
	b.ReportAllocs()
	for b.Loop() {
		a := Analyze(results)
		if len(a.Odd) == 0 {
			b.Fatal("no odd group")
		}
		if err := WriteText(io.Discard, results, a); err != nil {
			b.Fatal(err)
		}
		if err := WriteJSON(io.Discard, "default/hello", results, a); err != nil {
			b.Fatal(err)
		}
	}
}
