package live

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
)

// BenchmarkRunWithPages runs a pod on the simulated runtime (creation and
// teardown) with no live page, with the page and no one watching, and with
// 30 pages open (SSE clients reading in this process: they compete for the
// CPU, as a browser on the same machine would). own-ms/run is podstep's own
// time (the run's wall time less CRI calls and waits, session.Timing), the
// median of the b.N runs: the bar is 30 pages ≤ 5 % more than none.
//
//	go test ./internal/live -run '^$' -bench RunWithPages -benchtime 40x -count 5
func BenchmarkRunWithPages(b *testing.B) {
	for _, bc := range []struct {
		name    string
		serve   bool
		clients int
	}{{"no-serve", false, 0}, {"serve-0", true, 0}, {"serve-30", true, 30}} {
		b.Run(bc.name, func(b *testing.B) {
			own := make([]float64, 0, b.N)
			for range b.N {
				var s *Server
				var ts *httptest.Server
				if bc.serve {
					s = New()
					ts = httptest.NewServer(s.Handler())
					for range bc.clients {
						resp, err := http.Get(ts.URL + "/events")
						if err != nil {
							b.Fatal(err)
						}
						go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
					}
				}
				tm := runPod(b, "../../testdata/pods/hello.yaml", s, nil)
				own = append(own, tm.OverheadMs)
				if s != nil {
					if st := s.Hub.Stats(); st.Dropped != 0 {
						b.Errorf("%d pages dropped", st.Dropped)
					}
					s.Close()
					ts.Close()
				}
			}
			sort.Float64s(own)
			b.ReportMetric(own[len(own)/2], "own-ms/run")
		})
	}
}
