package events

import (
	"strings"
	"testing"
)

// BenchmarkClassify classifies the whole public corpus once per iteration.
func BenchmarkClassify(b *testing.B) {
	var samples []sample
	for _, f := range corpusFiles {
		samples = append(samples, loadCorpus(b, f)...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		for _, s := range samples {
			_ = Classify(s.message)
		}
	}
	b.ReportMetric(float64(len(samples)*b.N)/b.Elapsed().Seconds(), "msgs/s")
	// on a busy machine wall time measures the neighbours; CPU time measures the classifier
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(len(samples)*b.N)/cpu.Seconds(), "msgs/cpu-s")
	}
}

// BenchmarkExplainEvents parses and explains a 1,000-event JSON list with repeats, as
// `kubectl get events -A -o json` gives on a busy cluster.
func BenchmarkExplainEvents(b *testing.B) {
	samples := loadCorpus(b, "testdata/corpus.txt")
	var sb strings.Builder
	sb.WriteString(`{"kind":"List","items":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteString(",")
		}
		m := strings.ReplaceAll(strings.ReplaceAll(samples[i%len(samples)].message, `\`, `\\`), `"`, `\"`)
		m = strings.ReplaceAll(m, "\n", `\n`)
		sb.WriteString(`{"kind":"Event","type":"Warning","reason":"Failed","count":2,"involvedObject":{"kind":"Pod","name":"p"},"message":"` + m + `"}`)
	}
	sb.WriteString("]}")
	in := sb.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		msgs, _, err := Parse(strings.NewReader(in))
		if err != nil || len(Explain(msgs)) == 0 {
			b.Fatal(err)
		}
	}
}
