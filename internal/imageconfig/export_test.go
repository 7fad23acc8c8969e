package imageconfig

import "net/http"

// GuardForTest is the transport f sends through (its plain-HTTP guard).
func GuardForTest(f *Fetcher) http.RoundTripper { return f.rt }
