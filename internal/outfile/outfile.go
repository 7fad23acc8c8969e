// Package outfile writes the files podstep makes (replay --html, plan
// --crictl, run and proxy --record) without harming what a path already
// names. It refuses an output that is a symbolic link, a FIFO, a device, a
// socket or a directory, unless the user says --force (then a link is
// followed and a FIFO or device written into, as the user asked); "-" is
// stdout, never a file. Write writes a temporary file beside the output
// and renames it into place: a failed or interrupted write (SIGINT,
// SIGTERM, SIGHUP) leaves the output as it was and no temporary file.
// Open, for a recording written as the run goes, creates a new file beside
// the output and renames it into place at once, so that a killed run
// leaves what it had recorded. Either way the output is a new file of
// podstep's user: a file already there, whoever owns it, is replaced, never
// written into (another user's file at the path stays theirs, unchanged).
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
)

// UnsafeError is an output refused: what the path names is not a regular
// file (or is a link).
type UnsafeError struct {
	Path string
	What string // "a symbolic link", "a named pipe (FIFO)", "a device", …
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file: refusing to write over it (--force writes anyway)", e.Path, e.What)
}

// InterruptedError is a Write ended by a signal: the output is unchanged.
type InterruptedError struct {
	Path   string
	Signal os.Signal
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("writing %s: interrupted by %v; the file was left as it was", e.Path, e.Signal)
}

// Check says whether path may be written: it does not exist or is a
// regular file; "-" (stdout) and anything under force are allowed.
func Check(path string, force bool) error {
	if path == "-" || force {
		return nil
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if w := kind(fi.Mode()); w != "" {
		return &UnsafeError{Path: path, What: w}
	}
	return nil
}

// kind names a mode that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case !m.IsRegular():
		return "not a regular file"
	}
	return ""
}

// Options tune Write.
type Options struct {
	// Force writes through a link and into a FIFO or device.
	Force bool
	// Stdout is where "-" goes.
	Stdout io.Writer
	// Signals, for tests, replaces the process's SIGINT/SIGTERM/SIGHUP.
	Signals chan os.Signal
}

// Write writes path with write: into a temporary file beside it, renamed
// into place once written whole (mode 0644). A signal while it writes
// removes the temporary file and returns an *InterruptedError.
func Write(path string, o Options, write func(io.Writer) error) error {
	if path == "-" {
		if o.Stdout == nil {
			return errors.New("no stdout to write - to")
		}
		return write(o.Stdout)
	}
	if err := Check(path, o.Force); err != nil {
		return err
	}
	if o.Force {
		// Through a link to its target; into a FIFO or a device as it is.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			if err := write(f); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}
	}
	tmp, err := createTemp(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	// A signal closes the file (the write then fails) and removes it.
	sigs := o.Signals
	if sigs == nil {
		sigs = make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	var got os.Signal
	go func() {
		defer close(finished)
		select {
		case got = <-sigs:
			tmp.Close()
			os.Remove(tmp.Name())
		case <-done:
		}
	}()
	err = write(tmp)
	close(done)
	<-finished
	if got != nil {
		return &InterruptedError{Path: path, Signal: got}
	}
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// createTemp creates a new, empty file beside path (".NAME.RANDOM"),
// exclusively (O_EXCL, O_NOFOLLOW: nothing that was there is opened), mode
// 0644 less the umask, as a file os.Create makes. The error is the
// system's (its path would be the temporary file's).
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(uint64(rand.Uint32()), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // its path is the temporary file's
			}
			return nil, err
		}
		return f, nil
	}
	return nil, errors.New("no free temporary name beside it")
}

// Open creates path for writing as it goes (a recording): a new file
// beside it (createTemp), renamed into place at once, so that the file at
// path is podstep's user's and new, whatever was there (a file another
// user owns is replaced, not written into), and a killed run leaves what
// it wrote. A link, FIFO, device or directory at path is refused (Check),
// and rename never follows one put there meanwhile. Under force it opens
// whatever path names, as before: through a link, into a FIFO or device.
func Open(path string, force bool) (*os.File, error) {
	if err := Check(path, force); err != nil {
		return nil, err
	}
	if force {
		if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
			return os.OpenFile(path, os.O_WRONLY, 0)
		}
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
	}
	f, err := createTemp(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := os.Rename(f.Name(), path); err != nil {
		f.Close()
		os.Remove(f.Name())
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}
