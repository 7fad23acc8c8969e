// Package cleanup serves `podstep cleanup`: it removes what podstep left in
// a runtime and on disk, pods kept with --keep or left by a teardown that
// did not finish. It finds sandboxes by their label and removes directories
// only when they carry podstep's marker (internal/mark); it needs no engine,
// only a CRI client.
package cleanup
