package timeline

import (
	"errors"
	"io"

	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/record"
)

// WriteFile writes the recording read from rd (named source) as the page
// at out, as outfile.Write does (o): refused over a link, FIFO or device
// unless o.Force, atomically, left as it was on a signal. A damaged recording still gets its page, up to the
// damage (the page says where it stops), returned as damage; err is a page
// that could not be written.
func WriteFile(source string, rd *record.Reader, out string, o outfile.Options) (page *Page, damage, err error) {
	page = New(source, rd.Header())
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			damage = err
			page.Damage = err.Error()
			break
		}
		page.Add(ev)
	}
	return page, damage, outfile.Write(out, o, page.WriteHTML)
}
