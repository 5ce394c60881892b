package events

import (
	"strings"

	"github.com/pullpath/pullpath/internal/registry"
	"github.com/pullpath/pullpath/internal/report"
)

var (
	reTimestamps = lazyRE(`\b[EWI]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ \S+\]\s*|time="[^"]*"\s*|\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b`)
	reUDPPort    = lazyRE(`:\d+->`)
	reCountNote  = lazyRE(`\(x\d+ over [^)]*\)`)
	// reLogNoise is a tool's own info or warning line (crictl: "Config /etc/crictl.yaml does not exist").
	reLogNoise = lazyRE(`level=(?:debug|info|warning|warn)\b|^[IW]\d{4} \d{2}:\d{2}`)
)

// normalise removes what differs between repeats of the same failure: timestamps, ephemeral
// ports, event counts.
func normalise(s string) string {
	s = reTimestamps.ReplaceAllString(s, "")
	s = reUDPPort.ReplaceAllString(s, ":*->")
	s = reCountNote.ReplaceAllString(s, "")
	return strings.Join(strings.Fields(s), " ")
}

// reSourcePod reads the pod an event was about from its source: "event Failed on Pod/ns/name",
// a table row's "… on ns/pod/name" or "… on pod/name".
var reSourcePod = lazyRE(`on (?:Pod/(?:([^/\s]+)/)?|(?:([^/\s]+)/)?pod/)([^/\s]+)$`)

// podDecideFor is pod's command for the pod the source names, with placeholders for what it does not.
func podDecideFor(source string) string {
	m := reSourcePod.FindStringSubmatch(source)
	if m == nil {
		return podDecide
	}
	ns := m[1] + m[2]
	if ns == "" {
		ns = "NAMESPACE"
	}
	return strings.Replace(strings.Replace(podDecide, "POD", m[3], 1), "NAMESPACE", ns, 1)
}

// maxSources is how many places one folded finding lists; the rest are counted.
const maxSources = 10

// Explain classifies every message and folds repeats of the same failure into one finding with a
// count. A kubelet "Error: ErrImagePull" or "Back-off pulling image" without a cause is kept only
// when nothing else explains the failure.
func Explain(msgs []Message) []report.Finding {
	var out []report.Finding
	index := map[string]int{}
	var causeless []report.Finding
	for _, m := range msgs {
		fd := Classify(m.Text)
		if fd.Code == report.CodeUnknown && reLogNoise.MatchString(m.Text) {
			continue // a log line that reports no failure
		}
		if fd.Image == "" && m.Image != "" {
			fd.Image = m.Image
			if ref, err := registry.ParseReference(m.Image); err == nil && fd.Host == "" && fd.Class != report.ClassOther {
				fd.Host = ref.Host
			}
			fd.Decide = strings.Replace(fd.Decide, " IMAGE", " "+m.Image, 1)
			for i, s := range fd.NextSteps {
				fd.NextSteps[i] = strings.Replace(s, " IMAGE", " "+m.Image, 1)
			}
		}
		if strings.Contains(fd.Decide, " IMAGE ") {
			// the input names no image: a probe with a placeholder is not a command to run; the
			// pod names its image
			fd.Decide = ""
			if !fd.Decided {
				fd.Decide = podDecideFor(m.Source)
			}
		}
		fd.Count = max(m.Count, 1)
		if m.Source != "" {
			fd.Sources = []string{m.Source}
		}
		if fd.Code == report.CodeBackoffNoCause && len(strings.Fields(m.Text)) <= 6 {
			causeless = append(causeless, fd)
			continue
		}
		key := string(fd.Class) + "|" + string(fd.Code) + "|" + fd.Host + "|" + normalise(fd.Message)
		if fd.URL != "" && fd.Address != "" {
			// the same request failing the same way at the same address is one failure, however
			// the kubelet wrapped it (a Failed event, and the waiting state's "Back-off pulling image …: ErrImagePull: …")
			key = string(fd.Class) + "|" + string(fd.Code) + "|" + fd.Host + "|" + fd.URL + "|" + fd.Address
		}
		if i, ok := index[key]; ok {
			out[i].Count += fd.Count
			if len(out[i].Sources) < maxSources {
				out[i].Sources = append(out[i].Sources, fd.Sources...)
			} else {
				out[i].SourcesOmitted += len(fd.Sources)
			}
			continue
		}
		index[key] = len(out)
		out = append(out, fd)
	}
	if len(out) == 0 && len(causeless) > 0 {
		first := causeless[0]
		for _, c := range causeless[1:] {
			first.Count += c.Count
		}
		out = append(out, first)
	}
	return out
}
