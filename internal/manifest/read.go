package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxSize is the largest manifest podstep reads, in bytes: 3 MiB for the
// whole multi-document file, the size of the largest request the API server
// takes (its MaxRequestBodyBytes, k8s.io/apiserver). The same limit bounds
// the documents once YAML aliases are expanded (see [Parse]).
const MaxSize = 3 << 20

// Load reads the manifest file at path ("-" reads standard input) and parses
// it with Parse. A file that cannot be read, or that is larger than MaxSize,
// is reported as an *Error too.
func Load(path string) (*Bundle, error) {
	return LoadWith(path, Options{})
}

// LoadWith is Load with options (--select).
func LoadWith(path string, o Options) (*Bundle, error) {
	if path == "-" {
		return ReadWith(StdinName, os.Stdin, o)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, readError(path, err)
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	return ReadWith(path, f, o)
}

// Read reads a manifest from r and parses it with Parse; file is the name
// shown in the Bundle and in errors ("-" is shown as "<stdin>"). It reads
// at most MaxSize+1 bytes: a longer input (a device such as /dev/zero, an
// endless pipe) is refused without reading the rest.
func Read(file string, r io.Reader) (*Bundle, error) {
	return ReadWith(file, r, Options{})
}

// ReadWith is Read with options (--select).
func ReadWith(file string, r io.Reader, o Options) (*Bundle, error) {
	if file == "-" {
		file = StdinName
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, readError(file, err)
	}
	if len(data) > MaxSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("the manifest is larger than %s (%d bytes); expected at most %s, the most the API server takes in one request", sizeText(MaxSize), MaxSize, sizeText(MaxSize))}
	}
	return ParseWith(file, data, o)
}

func readError(file string, err error) *Error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if file == "-" {
		file = StdinName
	}
	return &Error{File: file, Msg: fmt.Sprintf("cannot read the manifest: %v; expected a readable YAML file (or - for standard input)", err)}
}

// sizeText writes a byte count such as 3145728 as "3 MiB".
func sizeText(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
