// Package manifest loads the pod manifest that podstep replays.
//
// A manifest is one YAML file holding several documents separated by "---"
// lines: exactly one Pod, plus any number of Secrets and ConfigMaps and at
// most one Node, all of apiVersion v1. [Load] and [Parse] turn such a file
// into a [Bundle]:
//
//   - Decoding is strict: every document is converted from YAML to JSON and
//     decoded into the k8s.io/api types; unknown fields, duplicate fields and
//     values of the wrong type are errors that name the field path.
//   - Defaults are then applied the way the API server applies them
//     (pkg/apis/core/v1/defaults.go in kubernetes): namespace "default",
//     restartPolicy Always, dnsPolicy ClusterFirst, imagePullPolicy derived
//     from the image tag, container requests defaulted from limits, volume
//     defaultMode 0644, Secret type Opaque and stringData merged into data,
//     and so on. See [Parse] for the full list.
//   - A Pod without metadata.uid gets a reproducible one derived from its
//     document bytes, the way the kubelet gives static pods a UID (see
//     [PodUID]).
//   - Finally every object is validated with a subset of the API server's
//     validation rules.
//
// Input is bounded before it is decoded: at most [MaxSize] bytes are read
// (files, standard input, devices), YAML aliases count at their expanded
// size against the same limit, a document hidden after "---" or "..." on a
// marker line is refused, and quantities must fit in 64 bits.
//
// Any problem with the input is reported as a single [*Error], the first one
// found in document order. Its message names the file, the document, the
// field path, what is wrong and what is expected; the podstep command maps it
// to exit code 2.
//
// Documents are numbered from 1 in file order, counting only documents that
// hold something: empty documents (a lone "---", or only comments) are
// skipped and not counted.
package manifest
