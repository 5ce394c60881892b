// Package cli is pullpath's command tree: one options struct per command (Complete, Validate, Run),
// results on Out, progress on ErrOut, and exit codes 0 (healthy), 1 (broken, diagnosed), 2 (could not run).
package cli
