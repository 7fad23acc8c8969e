package diff

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

// align returns a longest common subsequence alignment of the keys of a
// and b, as pairs in order, with the entries of one side only between. It
// is the classic dynamic programme: O(len(a)·len(b)) time and memory,
// which is small here because polling is folded first (a recording of a
// thousand steps has a few thousand entries). Among equal alignments it
// prefers, at each point, to report A's extra entries before B's, as
// unified diffs do.
func align(a, b []string) []pair {
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
