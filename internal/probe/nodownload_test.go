package probe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
)

// --no-download: the manifest and the first byte of each layer, every blob host still reached
// through its redirect, and the report says loudly that this was not a full pull.
func TestNoDownload(t *testing.T) {
	e := lab(t)
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.NoDownload = true
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s (%s), want ok", rep.Class, rep.Summary)
	}
	d := rep.Download
	if d.Verified || d.Partial != "no-download" || d.Layers != 3 || d.Blobs != 4 {
		t.Errorf("download = %+v, want 3 layers + config reached, partial no-download, not verified", d)
	}
	// the config (the platform check needs it) whole, then one byte per layer
	if d.Bytes > 16<<10 {
		t.Errorf("%d bytes transferred: the 64 KiB layers were downloaded", d.Bytes)
	}
	if !strings.Contains(rep.Summary, "reachable, not downloaded") {
		t.Errorf("summary %q", rep.Summary)
	}
	warned := false
	for _, w := range rep.Warnings {
		warned = warned || (w.Code == report.CodeNotDownloaded && strings.Contains(w.Message, "NOT downloaded"))
	}
	if !warned {
		t.Errorf("no NOT_DOWNLOADED warning: %+v", rep.Warnings)
	}
	blobHost := false
	for _, ep := range rep.Endpoints {
		if ep.Host == e.Lab.BlobAddr() && ep.Role == report.RoleBlob && ep.Steps[report.StepBlob] == report.Pass {
			blobHost = true
		}
	}
	if !blobHost {
		t.Errorf("blob host %s not reached: %+v", e.Lab.BlobAddr(), rep.Endpoints)
	}
	var text strings.Builder
	_ = report.WriteText(&text, rep, report.TextOptions{})
	if !strings.Contains(text.String(), "download  NOT a full pull (--no-download): 4/4 blobs reached") || !strings.Contains(text.String(), "WARNING   NOT_DOWNLOADED") {
		t.Errorf("text does not say it was not a full pull:\n%s", text.String())
	}
}

// A blob host that refuses its signed URL is still found with --no-download: the first byte is asked.
func TestNoDownloadStillReachesTheBlobHost(t *testing.T) {
	e := lab(t)
	e.Lab.SetFaults(registrytest.Faults{BlobForbidden: true})
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.NoDownload = true
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassEndpoint || rep.Code != report.CodeBlobForbidden || rep.Failing == nil || rep.Failing.Host != e.Lab.BlobAddr() {
		t.Errorf("class %s code %s failing %+v, want endpoint BLOB_FORBIDDEN on %s", rep.Class, rep.Code, rep.Failing, e.Lab.BlobAddr())
	}
}

// The agent's quick round: the manifest and the config blob through its redirect, no layer; the
// blob host is still reached, and the report says it was not a full pull.
func TestSampleReadsTheConfigBlobOnly(t *testing.T) {
	e := lab(t)
	o := e.Options(e.Lab.Ref("team/app:1.4"))
	o.NoDownload, o.Sample = true, true
	rep, err := probe.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != report.ClassOK {
		t.Fatalf("class %s (%s), want ok", rep.Class, rep.Summary)
	}
	d := rep.Download
	if d.Verified || d.Partial != "sample" || d.Layers != 0 || d.Blobs != 1 || d.Expected != 4 {
		t.Errorf("download = %+v, want the config alone of 4 blobs, partial sample, not verified", d)
	}
	if !strings.Contains(rep.Summary, "a quick round") || !strings.Contains(rep.Summary, "3 layers not read") {
		t.Errorf("summary %q", rep.Summary)
	}
	blobHost := false
	for _, ep := range rep.Endpoints {
		blobHost = blobHost || (ep.Host == e.Lab.BlobAddr() && ep.Role == report.RoleBlob && ep.Steps[report.StepBlob] == report.Pass)
	}
	if !blobHost {
		t.Errorf("blob host %s not reached: %+v", e.Lab.BlobAddr(), rep.Endpoints)
	}
	var text strings.Builder
	_ = report.WriteText(&text, rep, report.TextOptions{})
	if !strings.Contains(text.String(), "NOT a full pull (a quick round)") {
		t.Errorf("text does not say it was not a full pull:\n%s", text.String())
	}
}
