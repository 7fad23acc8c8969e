package tui

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestSecretsHiddenInTUI steps through testdata/pods/secrets-expansion.yaml
// and looks at every step's request and response views, before and after it
// ran, the pod and events panes, and the app container's log (it echoes its
// token and DSN): no Secret value shows, in clear or base64, and the log
// line shows where they were.
func TestSecretsHiddenInTUI(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/secrets-expansion.yaml")), Options{})
	h.resize(200, 60)
	var seen []string
	look := func() {
		seen = append(seen, h.detail(), h.frame())
		h.press("tab")
		seen = append(seen, h.detail())
		h.press("tab") // log
		seen = append(seen, h.frame())
		h.press("tab") // back to request
	}
	look() // every step pending, the first selected
	for h.m.nextID != 0 {
		h.press("space")
		look()
	}
	for s, _ := h.m.selected(); s.ID > 1; s, _ = h.m.selected() {
		h.press("k")
		look()
	}
	all := strings.Join(seen, "\n")
	for _, v := range []string{"Pg-Pa55word-Xk39q", "xQ!9", "tok-7Hq2-Lm9W-pp31", "Unused-Secret-Zr71"} {
		for _, s := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			if i := strings.Index(all, s); i >= 0 {
				t.Errorf("the TUI shows the secret %q: …%s…", s, all[max(0, i-100):min(len(all), i+40)])
			}
		}
	}
	for _, want := range []string{"app: connecting to postgres://u:<redacted>@db with token <redacted>", "- --pin=<redacted>"} {
		if !strings.Contains(all, want) {
			t.Errorf("the TUI never shows %q", want)
		}
	}
}
