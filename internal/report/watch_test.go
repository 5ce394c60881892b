package report

import (
	"strings"
	"testing"
	"time"
)

func TestWatchStatusGolden(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 30, 0, 0, time.UTC)
	st := &WatchStatus{APIVersion: APIVersion, Kind: "WatchStatus", Updated: now, Interval: "15m0s",
		Images: []string{"registry.corp.example/shop/web:1.4"},
		Nodes: []WatchNode{
			{Node: "aks-a-1", Pool: "a", Condition: "False", Since: now, Images: []WatchImage{{Image: "registry.corp.example/shop/web:1.4", Class: "ok", Since: now, LastProbed: now}}},
			{Node: "aks-b-1", Pool: "b", Condition: "True", Since: now, Images: []WatchImage{{Image: "registry.corp.example/a/very/long/repository/path/web:1.4", Class: "route", Code: "ROUTE_NONE", Host: "registry.corp.example:443", Role: "registry", Step: "route", Since: now, LastProbed: now}}},
			{Node: "aks-c-1", Pool: "c", Condition: "Unknown", Since: now, Images: []WatchImage{{Image: "registry.corp.example/shop/web:1.4", Since: now, Error: "the probe pod did not finish"}}},
		}}
	var b strings.Builder
	if err := WriteWatchStatusText(&b, st, "", TextOptions{Width: DefaultWidth}); err != nil {
		t.Fatal(err)
	}
	golden(t, "watch-status.golden", b.String())
}
