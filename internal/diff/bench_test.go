package diff

import "testing"

// BenchmarkCompare compares two real recordings (containerd 1.6): the
// init pod with itself, and the crash loop (its restarts) with the init
// pod: decoding, normalising and aligning every call.
func BenchmarkCompare(b *testing.B) {
	for _, pair := range []struct{ name, a, b string }{
		{"init-itself", "init.rec.gz", "init.rec.gz"},
		{"crashloop-vs-init", "crashloop.rec.gz", "init.rec.gz"},
	} {
		ra, rb := readFile(b, recordings+pair.a), readFile(b, recordings+pair.b)
		b.Run(pair.name, func(b *testing.B) {
			for b.Loop() {
				if res := Compare(ra, rb); len(res.Calls) == 0 {
					b.Fatal("no calls")
				}
			}
		})
	}
}
