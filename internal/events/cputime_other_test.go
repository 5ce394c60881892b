//go:build !unix

package events

import "time"

// cpuTime is unknown here: the benchmark reports wall-clock throughput only.
func cpuTime() time.Duration { return 0 }
