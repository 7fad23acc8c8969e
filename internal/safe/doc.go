// Package safe is the one sanitiser of text that reaches a person's
// terminal. Manifests, runtime errors and answers, a proxied kubelet's
// metadata, recordings and API-server text are untrusted: a name, an image
// reference or an error message may hold escape sequences that move the
// cursor, retitle the window, write the clipboard (OSC 52), make links
// (OSC 8) or recolour the screen (CVE-2021-25743 is kubectl's instance).
//
// What is escaped, visibly and never silently dropped:
//
//   - C0 controls (U+0000–U+001F) and DEL as \x1b, \x07, …, with \r as \r;
//     Text keeps \n and \t (the layout of logs and messages), Line escapes
//     them as \n and \t (one-line fields: names, titles);
//   - C1 controls (U+0080–U+009F, which some terminals take as CSI, OSC,
//     DCS, …) as \u009b;
//   - bytes that are not UTF-8 (a lone 0x9b is CSI on an 8-bit terminal)
//     as \x9b;
//   - the bidirectional overrides and isolates (U+061C, U+200E, U+200F,
//     U+202A–U+202E, U+2066–U+2069), which reorder what is shown, as \u202e.
//
// Everything else (printable text in any script, backslashes included) is
// unchanged. The escapes are also valid JSON string escapes, so JSON output
// that passes through Writer stays valid and means the same (encoding/json
// already escapes C0 itself).
//
// Frontends call Text or Line on untrusted strings before they colour them.
// Writer wraps a command's stdout and stderr as the net under that: it lets
// only SGR sequences (ESC [ params m, podstep's own colours) through whole
// and escapes every other control. Terminal does the same to one string
// (the TUI's frame, whose styles are SGR only).
package safe
