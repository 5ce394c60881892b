package events

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

type sample struct {
	source, runtime, host string
	class                 report.Class
	role                  report.Role
	message               string
}

func loadCorpus(t testing.TB, path string) []sample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sample
	var cur *sample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	flush := func() {
		if cur != nil {
			cur.message = strings.TrimSpace(cur.message)
			out = append(out, *cur)
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "=== "); ok {
			flush()
			p := strings.Split(h, "|")
			if len(p) != 5 {
				t.Fatalf("%s: bad header %q", path, line)
			}
			for i := range p {
				p[i] = strings.TrimSpace(p[i])
			}
			c, err := report.ParseClass(p[2])
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			cur = &sample{source: p[0], runtime: p[1], class: c, host: p[3], role: report.Role(p[4])}
			continue
		}
		if cur == nil || strings.HasPrefix(line, "#") && cur.message == "" {
			continue
		}
		cur.message += line + "\n"
	}
	flush()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The corpus of real messages: the class must match the label the thread established. Host and role
// are checked where the message names them.
func TestCorpus(t *testing.T) {
	for _, file := range []string{"testdata/corpus.txt", "testdata/lab.txt"} {
		samples := loadCorpus(t, file)
		classes := map[report.Class]int{}
		runtimes := map[string]int{}
		seen := map[string]string{}
		right, withAlt, hostsOK, hosts := 0, 0, 0, 0
		for _, s := range samples {
			classes[s.class]++
			runtimes[s.runtime]++
			if prev, dup := seen[s.message]; dup {
				t.Errorf("%s: same message as %s", s.source, prev)
			}
			seen[s.message] = s.source
			got := Classify(s.message)
			ok := got.Class == s.class
			if ok {
				right++
			}
			alt := ok
			for _, a := range got.Alternatives {
				alt = alt || a == s.class
			}
			if alt {
				withAlt++
			}
			if !ok {
				t.Logf("MISS %s: got %s (%s, host %q role %s, alt %v), want %s", s.source, got.Class, got.Code, got.Host, got.Role, got.Alternatives, s.class)
			}
			if s.host != "-" {
				hosts++
				if sameHost(got.Host, s.host) && (s.role == "-" || got.Role == s.role) {
					hostsOK++
				} else {
					t.Logf("HOST %s: got %q/%s, want %q/%s", s.source, got.Host, got.Role, s.host, s.role)
				}
			}
			if got.Owner != got.Class.Owner() || got.Reason == "" || got.Message == "" || got.DecidedBecause == "" || got.Decided && len(got.Alternatives) > 0 {
				t.Errorf("%s: incomplete finding %+v", s.source, got)
			}
		}
		n := len(samples)
		acc := float64(right) / float64(n)
		t.Logf("%s: %d messages, class accuracy %.1f%% (%d/%d), with alternatives %.1f%%, host+role %d/%d; classes %v; runtimes %v",
			file, n, 100*acc, right, n, 100*float64(withAlt)/float64(n), hostsOK, hosts, classes, runtimes)
		if acc < 0.95 {
			t.Errorf("%s: class accuracy %.1f%% is below 95%%", file, 100*acc)
		}
		if float64(hostsOK) < 0.9*float64(hosts) {
			t.Errorf("%s: host+role right for %d of %d", file, hostsOK, hosts)
		}
	}
}

// sameHost compares the host part: findings carry host:port, the corpus names the host as the
// message does (with a port only when the message shows one).
func sameHost(got, want string) bool {
	g, w := hostName(got), hostName(want)
	return strings.EqualFold(hubAlias(g), hubAlias(w)) || strings.EqualFold(g, w)
}
