package contract

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/watch"
)

// watch status -o json as the watcher stores it: a broken node and one whose probe could not run.
func TestWatchStatusDocument(t *testing.T) {
	now := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	st := watch.Status{APIVersion: report.APIVersion, Kind: "WatchStatus", Updated: now, Interval: "15m0s", Images: []string{podImage},
		Nodes: []watch.NodeStatus{
			{Node: "b2", Pool: "poolb", Condition: "True", Reason: "Route", Message: podImage + ": registry.corp.example:443 (registry) step route ROUTE_NONE", Since: now,
				Images: []watch.ImageStatus{{Image: podImage, Class: "route", Code: "ROUTE_NONE", Host: "registry.corp.example:443", Role: "registry", Step: "route", Since: now, LastProbed: now}}},
			{Node: "c1", Pool: "poolc", Condition: "Unknown", Reason: "Other", Message: "the probe could not run", Since: now,
				Images: []watch.ImageStatus{{Image: podImage, Since: now, LastProbed: now, Error: "the probe pod did not finish"}}},
		}}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "WatchStatus", b)
}
