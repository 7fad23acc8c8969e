package diff

import "github.com/podstep/podstep/internal/cri"

// Op says how an aligned entry relates the two recordings.
type Op string

// The alignment's operations, as a unified diff shows them.
const (
	Same   Op = "="
	OnlyA  Op = "-"
	OnlyB  Op = "+"
	Differ Op = "~" // the same method and container, with different fields or codes
)

// pair is one aligned position: indexes into A and B, -1 for none.
type pair struct{ a, b int }

// maxTable is the largest table (cells, 4 bytes each: 16 MiB) align fills
// whole. Above it, align is Hirschberg's: the same longest common
// subsequence in linear memory, twice the time (MaxCalls bounds that).
const maxTable = 4 << 20

// leafCells is where Hirschberg's recursion hands a part to the table.
var leafCells int64 = maxTable / 16

// align returns a longest common subsequence alignment of the keys of a
// and b, as pairs in order, with the entries of one side only between.
// Up to maxTable cells it is the classic dynamic programme (O(len(a)·len(b))
// time and memory; polling is folded first, so a recording of a thousand
// steps has a few thousand entries); above, Hirschberg's divide and
// conquer (O(len(a)+len(b)) memory). Among equal alignments the classic
// one prefers, at each point, to report A's extra entries before B's, as
// unified diffs do; Hirschberg's may place ties otherwise.
func align(a, b []string) []pair {
	if int64(len(a))*int64(len(b)) <= maxTable {
		return alignTable(a, b)
	}
	ids := map[string]int32{}
	id := func(keys []string) []int32 {
		out := make([]int32, len(keys))
		for i, k := range keys {
			v, ok := ids[k]
			if !ok {
				v = int32(len(ids))
				ids[k] = v
			}
			out[i] = v
		}
		return out
	}
	ia, ib := id(a), id(b)
	out := make([]pair, 0, max(len(a), len(b)))
	// The common start and end pair as they are (an LCS keeps them).
	pre := 0
	for pre < len(ia) && pre < len(ib) && ia[pre] == ib[pre] {
		out = append(out, pair{pre, pre})
		pre++
	}
	suf := 0
	for suf < len(ia)-pre && suf < len(ib)-pre && ia[len(ia)-1-suf] == ib[len(ib)-1-suf] {
		suf++
	}
	hirschberg(ia[pre:len(ia)-suf], ib[pre:len(ib)-suf], pre, pre, &out)
	for k := suf; k > 0; k-- {
		out = append(out, pair{len(ia) - k, len(ib) - k})
	}
	return out
}

// hirschberg appends an LCS alignment of a and b (at offsets oa, ob).
func hirschberg(a, b []int32, oa, ob int, out *[]pair) {
	n, m := len(a), len(b)
	switch {
	case n == 0:
		for j := range m {
			*out = append(*out, pair{-1, ob + j})
		}
		return
	case m == 0:
		for i := range n {
			*out = append(*out, pair{oa + i, -1})
		}
		return
	case n == 1:
		k := -1
		for j, v := range b {
			if v == a[0] {
				k = j
				break
			}
		}
		if k < 0 {
			*out = append(*out, pair{oa, -1})
		}
		for j := range m {
			if j == k {
				*out = append(*out, pair{oa, ob + j})
			} else {
				*out = append(*out, pair{-1, ob + j})
			}
		}
		return
	case int64(n)*int64(m) <= leafCells:
		for _, p := range alignTable(a, b) {
			if p.a >= 0 {
				p.a += oa
			}
			if p.b >= 0 {
				p.b += ob
			}
			*out = append(*out, p)
		}
		return
	}
	mid := n / 2
	fwd := lcsRow(a[:mid], b, false)
	bwd := lcsRow(a[mid:], b, true)
	k, best := 0, int32(-1)
	for j := 0; j <= m; j++ {
		if v := fwd[j] + bwd[j]; v > best {
			k, best = j, v
		}
	}
	hirschberg(a[:mid], b[:k], oa, ob, out)
	hirschberg(a[mid:], b[k:], oa+mid, ob+k, out)
}

// lcsRow returns, for each j in 0..len(b), the LCS length of a and b[:j]
// (or, backward, of a and b[j:]), in one row of memory.
func lcsRow(a, b []int32, backward bool) []int32 {
	m := len(b)
	prev, cur := make([]int32, m+1), make([]int32, m+1)
	for ii := range a {
		if !backward {
			x := a[ii]
			cur[0] = 0
			for j := 1; j <= m; j++ {
				switch {
				case x == b[j-1]:
					cur[j] = prev[j-1] + 1
				case prev[j] >= cur[j-1]:
					cur[j] = prev[j]
				default:
					cur[j] = cur[j-1]
				}
			}
		} else {
			x := a[len(a)-1-ii]
			cur[m] = 0
			for j := m - 1; j >= 0; j-- {
				switch {
				case x == b[j]:
					cur[j] = prev[j+1] + 1
				case prev[j] >= cur[j+1]:
					cur[j] = prev[j]
				default:
					cur[j] = cur[j+1]
				}
			}
		}
		prev, cur = cur, prev
	}
	return prev
}

// alignTable is the classic dynamic programme over the whole table.
func alignTable[T comparable](a, b []T) []pair {
	n, m := len(a), len(b)
	// l[i][j] is the LCS length of a[i:] and b[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				l[i][j] = l[i+1][j+1] + 1
			case l[i+1][j] >= l[i][j+1]:
				l[i][j] = l[i+1][j]
			default:
				l[i][j] = l[i][j+1]
			}
		}
	}
	var out []pair
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, pair{i, j})
			i, j = i+1, j+1
		case l[i+1][j] >= l[i][j+1]:
			out = append(out, pair{i, -1})
			i++
		default:
			out = append(out, pair{-1, j})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, pair{i, -1})
	}
	for ; j < m; j++ {
		out = append(out, pair{-1, j})
	}
	return out
}

// alignCalls aligns two recordings' calls. A CSI driver's calls and the
// runtime's are aligned apart, each channel in its own order, then merged
// back in recording order: the kubelet sends them from different
// goroutines (the volume manager's reconciler; the pod worker and the
// garbage collector), so where a NodeUnpublishVolume falls among the
// teardown's CRI calls is a race of the kubelet's, not a difference (its
// reconciler unpublishes once the pod's containers stopped, before or after
// the collector removes them). Without CSI calls it is align.
func alignCalls(a, b []*Call) []pair {
	split := func(calls []*Call) (crIdx, csiIdx []int) {
		for i, c := range calls {
			if cri.IsCRI(c.Method) {
				crIdx = append(crIdx, i)
			} else {
				csiIdx = append(csiIdx, i)
			}
		}
		return crIdx, csiIdx
	}
	criA, csiA := split(a)
	criB, csiB := split(b)
	if len(csiA) == 0 && len(csiB) == 0 {
		return align(keys(a), keys(b))
	}
	channel := func(ia, ib []int) []pair {
		ka, kb := make([]string, len(ia)), make([]string, len(ib))
		for i, x := range ia {
			ka[i] = a[x].alignKey()
		}
		for i, x := range ib {
			kb[i] = b[x].alignKey()
		}
		ps := align(ka, kb)
		for i, p := range ps {
			if p.a >= 0 {
				ps[i].a = ia[p.a]
			}
			if p.b >= 0 {
				ps[i].b = ib[p.b]
			}
		}
		return ps
	}
	return mergePairs(channel(criA, criB), channel(csiA, csiB))
}

// mergePairs merges two alignments, each in order, into one: by A's
// order where both entries have an A call, else by B's, else A's extra
// entry first (as align reports ties).
func mergePairs(x, y []pair) []pair {
	out := make([]pair, 0, len(x)+len(y))
	for len(x) > 0 && len(y) > 0 {
		p, q := x[0], y[0]
		var first bool
		switch {
		case p.a >= 0 && q.a >= 0:
			first = p.a < q.a
		case p.b >= 0 && q.b >= 0:
			first = p.b < q.b
		default:
			first = p.a >= 0
		}
		if first {
			out, x = append(out, p), x[1:]
		} else {
			out, y = append(out, q), y[1:]
		}
	}
	return append(append(out, x...), y...)
}
