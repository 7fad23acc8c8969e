package diff

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// checkAlignment fails unless out is an alignment of a and b: every index
// of each once, in order, pairs only of equal keys; it returns the pairs.
func checkAlignment(t *testing.T, a, b []string, out []pair) int {
	t.Helper()
	i, j, same := 0, 0, 0
	for _, p := range out {
		if p.a >= 0 {
			if p.a != i {
				t.Fatalf("A index %d, want %d", p.a, i)
			}
			i++
		}
		if p.b >= 0 {
			if p.b != j {
				t.Fatalf("B index %d, want %d", p.b, j)
			}
			j++
		}
		if p.a >= 0 && p.b >= 0 {
			if a[p.a] != b[p.b] {
				t.Fatalf("paired %q with %q", a[p.a], b[p.b])
			}
			same++
		}
	}
	if i != len(a) || j != len(b) {
		t.Fatalf("covered %d of A (%d), %d of B (%d)", i, len(a), j, len(b))
	}
	return same
}

func randomKeys(r *rand.Rand, n, alphabet int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("Method", r.IntN(alphabet))
	}
	return out
}

// TestHirschbergIsLCS: the linear-memory alignment pairs as many entries
// as the classic table, on random inputs of many shapes.
func TestHirschbergIsLCS(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for k := range 200 {
		a, b := randomKeys(r, r.IntN(300), 1+r.IntN(8)), randomKeys(r, r.IntN(300), 1+r.IntN(8))
		want := checkAlignment(t, a, b, alignTable(a, b))
		ids := map[string]int32{}
		conv := func(keys []string) []int32 {
			out := make([]int32, len(keys))
			for i, x := range keys {
				if _, ok := ids[x]; !ok {
					ids[x] = int32(len(ids))
				}
				out[i] = ids[x]
			}
			return out
		}
		var out []pair
		hirschbergSmall(conv(a), conv(b), &out)
		if got := checkAlignment(t, a, b, out); got != want {
			t.Fatalf("case %d (%d×%d): Hirschberg pairs %d, the table %d", k, len(a), len(b), got, want)
		}
	}
}

// hirschbergSmall runs the divide and conquer down to single rows (the
// leaf size would hand these small inputs to the table at once).
func hirschbergSmall(a, b []int32, out *[]pair) {
	old := leafCells
	leafCells = 1
	defer func() { leafCells = old }()
	hirschberg(a, b, 0, 0, out)
}

// TestAlignMemory: 10,000 entries a side (the table would be 400 MB;
// issue 25: 20,000 took 1.69 GB) align in linear memory; so do inputs that
// share a long start and end.
func TestAlignMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b := randomKeys(r, 10000, 20), randomKeys(r, 10000, 20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := align(a, b)
	runtime.ReadMemStats(&after)
	checkAlignment(t, a, b, out)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("aligning 10,000 × 10,000 allocated %d MiB, want under 64", alloc>>20)
	}
	common := randomKeys(r, 30000, 5)
	a = append(append(append([]string{}, common[:15000]...), "x", "y"), common[15000:]...)
	b = append(append(append([]string{}, common[:15000]...), "y", "z", "x"), common[15000:]...)
	if same := checkAlignment(t, a, b, align(a, b)); same != 30001 {
		t.Errorf("paired %d, want 30,001", same)
	}
}
