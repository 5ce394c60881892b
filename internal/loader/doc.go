// Package loader provides the tiny static loader that lets a node run pullpath without any pull:
// the probe binary travels in ConfigMaps, and the loader joins the parts and execs them.
//
// It is not Go because no Go binary fits: a ConfigMap holds at most 1 MiB (1,048,576 bytes) and the
// smallest static Go binary is 1.24 MB. The loader is C without libc (loader.c, raw syscalls for
// x86_64 and aarch64), a few KB, built reproducibly by scripts/loader.sh; the binaries are
// committed, embedded, and a test rebuilds them and compares the bytes.
//
// How a probe pod uses it:
//   - the probe binary is cut with [Split] into parts of [PartSize], one ConfigMap per part
//     (binaryData key part-000, part-001, …), and [Binary] for the node's architecture goes into
//     one more ConfigMap under the key [File];
//   - all of them are projected into one directory by a projected volume with defaultMode 0755,
//     so the loader is executable (ConfigMap volumes are read-only; the parts need no mode);
//   - the joined binary goes into a sealed memfd (an emptyDir file where memfd_create is refused);
//     the loader runs it only when its size and SHA-256 are the ones the command names: bytes from
//     a second attacher or a replaced ConfigMap are refused;
//   - the container's command is [Command], on an image the node already has (its sandbox image)
//     with imagePullPolicy Never: a static binary needs only the image's root filesystem, never its
//     contents, and the loader hands it only the PULLPATH_* variables ([Env]), none of the image's.
//
// A failure of the loader ends the container with a status from 119 to 125 ([Failed]) and one line,
// prefixed "pullpath-loader: ", on stderr and in the termination message.
package loader
