package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/session"
)

// Replay is `podstep replay FILE --serve ADDR`: the recording's lines, as
// they were recorded, on the live page, until ctx ends (a signal). A file
// that is not a recording is bad usage before anything listens; a damaged
// one is served up to the damage, which is said on stderr.
func (o *Flags) Replay(ctx context.Context, path string, stderr io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	defer f.Close()
	rd, err := record.NewReader(f)
	if err != nil {
		return session.Usagef("replay %s: %v", path, err)
	}
	s, err := o.Start(stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintln(stderr, rd.Header().Banner(path))
	if err := Feed(s.Hub, rd); err != nil {
		fmt.Fprintf(stderr, "podstep: replay %s: %v (the page shows what was readable)\n", path, err)
	}
	fmt.Fprintln(stderr, "podstep: serving the recording until interrupted (Ctrl-C)")
	<-ctx.Done()
	if session.Signalled() {
		return session.Silent(session.InterruptedCode()) // 128+N, as every command
	}
	return nil
}

// Feed writes a recording's header and every line the reader gives to w
// (a Hub), as recorded; it stops at the end or at damage (returned).
func Feed(w io.Writer, rd *record.Reader) error {
	h, err := json.Marshal(rd.Header())
	if err != nil {
		return fmt.Errorf("encode header: %w", err)
	}
	if _, err := w.Write(append(h, '\n')); err != nil {
		return err
	}
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := w.Write(append(ev.Raw[:len(ev.Raw):len(ev.Raw)], '\n')); err != nil {
			return err
		}
	}
}
