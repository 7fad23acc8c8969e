// Package limit reads input files with a bound on their size.
package limit

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// ReadFile reads a whole input file of at most max bytes (what is the
// input: "a recording or trace"). A larger one, or one whose first 64 KiB
// hold a NUL byte (a device such as /dev/zero, a binary file; a gzip
// stream is let through, its reader checks it), is an error after reading
// at most max+1 bytes, not an out-of-memory.
func ReadFile(path string, max int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() <= max {
		buf.Grow(int(fi.Size()) + 1)
	}
	head := make([]byte, 64<<10)
	n, err := io.ReadFull(f, head)
	head = head[:n]
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	if !bytes.HasPrefix(head, []byte{0x1f, 0x8b}) && bytes.IndexByte(head, 0) >= 0 {
		return nil, fmt.Errorf("%s: binary data (a NUL byte in the first %d bytes): expected %s", path, len(head), what)
	}
	buf.Write(head)
	if _, err := io.Copy(&buf, io.LimitReader(f, max+1-int64(len(head)))); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > max {
		return nil, fmt.Errorf("%s: larger than %d MiB: expected %s of at most %d MiB", path, max>>20, what, max>>20)
	}
	return buf.Bytes(), nil
}
