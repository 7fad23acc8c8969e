// Package mark is how podstep recognises what it made, so that `podstep
// cleanup` removes that and nothing else: the label on every sandbox and
// container it creates (ManagedLabel), the annotations on a sandbox naming
// its pod and log directories, and the marker file (File) it writes into
// each directory it makes. The engine marks (Dir); cleanup checks (Check).
//
// Labels and annotations are not trusted alone: a manifest can set them.
// A directory is removed only when it holds the marker, naming the same pod
// and the same path, and lies where podstep puts it.
package mark
