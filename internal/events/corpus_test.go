package events

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
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
		// a comment is "# …" before the message; buildkit's own lines start "#3 ERROR"
		if cur == nil || (line == "#" || strings.HasPrefix(line, "# ")) && cur.message == "" {
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

// corpusFiles are the real messages from public threads and vendor pages; lab.txt (containerd's
// own strings from the lab) is measured on its own.
var corpusFiles = []string{"testdata/corpus.txt", "testdata/corpus-a.txt", "testdata/corpus-b.txt", "testdata/corpus-c.txt", "testdata/corpus-d.txt", "testdata/corpus-e.txt", "testdata/corpus-f.txt", "testdata/corpus-g.txt", "testdata/corpus-h.txt", "testdata/corpus-i.txt", "testdata/corpus-j.txt", "testdata/corpus-k.txt", "testdata/corpus-l.txt", "testdata/corpus-m.txt", "testdata/corpus-n.txt", "testdata/corpus-o.txt", "testdata/corpus-p.txt"}

var (
	showHeldOut = flag.Bool("heldout-misses", false, "list the held-out set's misses by family (only once tuning is over)")
	tuning      = flag.Bool("tuning", false, "while tuning: neither print nor check the held-out figures, so they cannot steer the rules")
)

// heldOut puts a source thread in the held-out test third by a hash of its name, so the split was
// fixed before any tuning and cannot drift: every message of a thread is on the same side.
func heldOut(source string) bool {
	h := sha256.Sum256([]byte(source))
	return h[0]%3 == 0
}

type score struct {
	n, right, withAlt, hosts, hostsOK int
	decided, decidedOK                int // findings that said the text decides them, and of those the right ones
	classes, runtimes                 map[string]int
	sources                           map[string]bool
	misses                            map[string]int // family -> count
}

func newScore() *score {
	return &score{classes: map[string]int{}, runtimes: map[string]int{}, sources: map[string]bool{}, misses: map[string]int{}}
}

func (sc *score) add(s sample, got report.Finding) (classOK, altOK, hostOK bool) {
	sc.n++
	sc.classes[string(s.class)]++
	sc.runtimes[s.runtime]++
	sc.sources[s.source] = true
	classOK = got.Class == s.class
	altOK = classOK || slices.Contains(got.Alternatives, s.class)
	if classOK {
		sc.right++
	} else {
		sc.misses[fmt.Sprintf("labelled %s, read as %s (%s)", s.class, got.Class, got.Code)]++
	}
	if altOK {
		sc.withAlt++
	}
	if got.Decided {
		sc.decided++
		if classOK {
			sc.decidedOK++
		}
	}
	hostOK = true
	if s.host != "-" {
		sc.hosts++
		hostOK = sameHost(got.Host, s.host) && (s.role == "-" || got.Role == s.role)
		if hostOK {
			sc.hostsOK++
		}
	}
	return classOK, altOK, hostOK
}

func pct(a, b int) float64 { return 100 * float64(a) / float64(max(b, 1)) }

func (sc *score) line(name string) string {
	return fmt.Sprintf("%s: %d messages from %d sources: first class %.1f%% (%d/%d), with alternatives %.1f%% (%d/%d), host+role %d/%d; decided %d (%.1f%%), of them right %.1f%% (%d)",
		name, sc.n, len(sc.sources), pct(sc.right, sc.n), sc.right, sc.n, pct(sc.withAlt, sc.n), sc.withAlt, sc.n, sc.hostsOK, sc.hosts, sc.decided, pct(sc.decided, sc.n), pct(sc.decidedOK, sc.decided), sc.decidedOK)
}

func checkFinding(t *testing.T, s sample, got report.Finding) {
	t.Helper()
	if got.Owner != got.Class.Owner() || got.Reason == "" || got.Message == "" || got.DecidedBecause == "" || got.Decided && len(got.Alternatives) > 0 {
		t.Errorf("%s: incomplete finding %+v", s.source, got)
	}
}

// TestCorpus measures explain on real messages with the honest protocol: the corpus is split by
// source thread into a dev set (two thirds, the only one rules are tuned on: its misses are
// listed) and a held-out test set (one third: only its figures are printed).
func TestCorpus(t *testing.T) {
	dev, test := newScore(), newScore()
	roundDev, roundTest := map[string]*score{}, map[string]*score{}
	seen := map[string]string{}
	for _, file := range corpusFiles {
		r := roundOf(file)
		if roundDev[r] == nil {
			roundDev[r], roundTest[r] = newScore(), newScore()
		}
		for _, s := range loadCorpus(t, file) {
			if prev, dup := seen[s.message]; dup {
				t.Errorf("%s: same message as %s", s.source, prev)
			}
			seen[s.message] = s.source
			got := Classify(s.message)
			checkFinding(t, s, got)
			if heldOut(s.source) {
				test.add(s, got)
				roundTest[r].add(s, got)
				continue
			}
			roundDev[r].add(s, got)
			classOK, _, hostOK := dev.add(s, got)
			if !classOK {
				t.Logf("MISS %s: got %s (%s, host %q role %s, alt %v), want %s\n  %.400s", s.source, got.Class, got.Code, got.Host, got.Role, got.Alternatives, s.class, s.message)
			}
			if !hostOK {
				t.Logf("HOST %s: got %q/%s, want %q/%s", s.source, got.Host, got.Role, s.host, s.role)
			}
		}
	}
	t.Log(dev.line("dev (tuned on)"))
	if !*tuning {
		t.Log(test.line("held-out test"))
	}
	if len(roundDev) > 1 {
		for _, r := range slices.Sorted(maps.Keys(roundDev)) {
			t.Log(roundDev[r].line(r + ", dev part"))
			if !*tuning {
				t.Log(roundTest[r].line(r + ", held-out part"))
			}
		}
	}
	all := newScore()
	for _, sc := range []*score{dev, test} {
		all.n += sc.n
		for k, v := range sc.classes {
			all.classes[k] += v
		}
		for k, v := range sc.runtimes {
			all.runtimes[k] += v
		}
		for k := range sc.sources {
			all.sources[k] = true
		}
	}
	t.Logf("corpus: %d messages from %d sources; classes %v; runtimes %v", all.n, len(all.sources), all.classes, all.runtimes)
	if *showHeldOut {
		fams := slices.Sorted(maps.Keys(test.misses))
		for _, f := range fams {
			t.Logf("held-out miss family: %s ×%d", f, test.misses[f])
		}
	}
	if pct(dev.decidedOK, dev.decided) < decidedFloor || pct(dev.decided, dev.n) < decidedCoverageFloor {
		t.Errorf("dev: %.1f%% of the findings that say the text decides them are right, deciding %.1f%% of the messages; below %.1f%% / %.1f%%",
			pct(dev.decidedOK, dev.decided), pct(dev.decided, dev.n), decidedFloor, decidedCoverageFloor)
	}
	if pct(dev.right, dev.n) < devFloor {
		t.Errorf("dev first-class accuracy %.1f%% is below %.1f%%", pct(dev.right, dev.n), devFloor)
	}
	if *tuning {
		return
	}
	if pct(test.decidedOK, test.decided) < testDecidedFloor || pct(test.decided, test.n) < testDecidedCoverageFloor {
		t.Errorf("held-out: decided %.1f%% of the messages, %.1f%% of them right; below %.1f%% / %.1f%%",
			pct(test.decided, test.n), pct(test.decidedOK, test.decided), testDecidedCoverageFloor, testDecidedFloor)
	}
	if pct(test.right, test.n) < testFloor || pct(test.withAlt, test.n) < testAltFloor {
		t.Errorf("held-out accuracy %.1f%% / %.1f%% with alternatives is below %.1f%% / %.1f%%", pct(test.right, test.n), pct(test.withAlt, test.n), testFloor, testAltFloor)
	}
	if float64(dev.hostsOK) < hostFloor*float64(dev.hosts) || float64(test.hostsOK) < hostFloor*float64(test.hosts) {
		t.Errorf("host+role right for %d/%d (dev), %d/%d (test)", dev.hostsOK, dev.hosts, test.hostsOK, test.hosts)
	}
}

// Floors the corpus must hold: the honest figures reached (2026-12-03, after round 7: dev 87.5 %
// on 763 messages; held-out 83.0 % and 92.0 % with alternatives on 401), below issue 11's goal
// (dev 98 %, held-out 95 % / 99 %). Rounds 3 to 7 added 653 messages from new sources (corpus-e to
// -n), taken blind; read before any tuning on them, their dev parts scored 80.2 %, 75.3 %, 70.9 %,
// 75.5 % and 78.2 % first class (87.7 %, 85.2 %, 86.1 %, 88.8 % and 87.4 % with alternatives), so
// the older sets overstate what unseen text gets. What remains is mostly text that does not hold
// its cause: registries that answer a missing repository like a private one, outages and client
// bugs that show as an ordinary 401 or not-found, wrappers that drop the runtime's error.
const (
	devFloor     = 87.0
	testFloor    = 82.5
	testAltFloor = 91.5
	hostFloor    = 0.9
	// a finding that says the text decides it must be right: a calibrated judgement since
	// 2026-12-03 (calibrate.go); on dev 345 of 763 messages are decided, every one right (dev's
	// folds, each judged by tables learned on the others: 41.7 %, 99.1 %). On held-out, 174 of 401
	// are decided and 163 of them right (93.7 %): the 99 % is not reached there. With
	// round 8 (83 messages, 2026-12-03): held-out 178 of 430 decided (41.4 %), 167 right (93.8 %)
	// With round 9 (102 messages, 2026-12-03): dev 406 of 889 decided (45.7 %), all right;
	// held-out 197 of 460 (42.8 %), 186 right (94.4 %)
	decidedFloor             = 99.5
	decidedCoverageFloor     = 43.0
	testDecidedFloor         = 93.0
	testDecidedCoverageFloor = 41.0
)

// The lab's own containerd strings: every one must be read right.
func TestLabStrings(t *testing.T) {
	sc := newScore()
	for _, s := range loadCorpus(t, "testdata/lab.txt") {
		got := Classify(s.message)
		checkFinding(t, s, got)
		if classOK, _, hostOK := sc.add(s, got); !classOK || !hostOK {
			t.Errorf("%s: got %s %q/%s, want %s %q/%s", s.source, got.Class, got.Host, got.Role, s.class, s.host, s.role)
		}
	}
	t.Log(sc.line("lab"))
}

// sameHost compares the host part: findings carry host:port, the corpus names the host as the
// message does (with a port only when the message shows one).
func sameHost(got, want string) bool {
	g, w := hostName(got), hostName(want)
	return strings.EqualFold(hubAlias(g), hubAlias(w)) || strings.EqualFold(g, w)
}

// roundOf names the collection round a corpus file belongs to, for the figures per round.
func roundOf(file string) string {
	if strings.HasSuffix(file, "corpus-n.txt") {
		return "round 7"
	}
	if strings.HasSuffix(file, "corpus-o.txt") {
		return "round 8"
	}
	if strings.HasSuffix(file, "corpus-p.txt") {
		return "round 9"
	}
	return "rounds 1-6"
}

// blindFiles are the rounds collected blind and not yet learned from: TestBlindRound measures them
// at first sight, beside the old held-out set; once a round's dev part has been tuned on, its
// file moves to corpusFiles.
var blindFiles = []string{}

// TestBlindRound measures each blind round's dev part and held-out part apart, and the old
// held-out set beside them: first class, label among the alternatives, decided coverage and
// decided precision. With -tuning, only the dev parts.
func TestBlindRound(t *testing.T) {
	if len(blindFiles) == 0 {
		t.Skip("no blind round waiting")
	}
	oldTest := newScore()
	if !*tuning {
		for _, file := range corpusFiles {
			for _, s := range loadCorpus(t, file) {
				if heldOut(s.source) {
					oldTest.add(s, Classify(s.message))
				}
			}
		}
		t.Log(oldTest.line("old held-out"))
	}
	for _, file := range blindFiles {
		dev, test := newScore(), newScore()
		for _, s := range loadCorpus(t, file) {
			got := Classify(s.message)
			checkFinding(t, s, got)
			if heldOut(s.source) {
				test.add(s, got)
				continue
			}
			if classOK, _, _ := dev.add(s, got); !classOK || got.Decided && !classOK {
				t.Logf("MISS %s: got %s (%s, host %q role %s, alt %v, decided %v), want %s\n  %.300s", s.source, got.Class, got.Code, got.Host, got.Role, got.Alternatives, got.Decided, s.class, s.message)
			}
		}
		t.Log(dev.line(file + " dev part"))
		if !*tuning {
			t.Log(test.line(file + " held-out part"))
		}
	}
}

var showRelabel = flag.Bool("relabel", false, "compare testdata/relabel.txt's second labelling of held-out messages with the corpus's labels and explain's decided findings (reads held-out: aggregate figures only)")

// TestRelabel measures the labels themselves: how often an independent second labelling of the
// held-out messages explain decided agrees with the corpus's, and how often a decided finding is
// right on the messages both labellings agree on. A held-out reading, so only with -relabel.
func TestRelabel(t *testing.T) {
	if !*showRelabel {
		t.Skip("reads held-out: -relabel")
	}
	second := map[string][2]string{} // source -> class, confidence
	for _, s := range loadRelabel(t, "testdata/relabel.txt") {
		second[s[0]] = [2]string{s[1], s[2]}
	}
	type tally struct{ n, agree, right, agreedRight int }
	by := map[string]*tally{"all": {}}
	for _, file := range corpusFiles {
		for _, s := range loadCorpus(t, file) {
			l, ok := second[s.source]
			if !ok || !heldOut(s.source) {
				continue
			}
			got := Classify(s.message)
			if by[l[1]] == nil {
				by[l[1]] = &tally{}
			}
			for _, c := range []*tally{by["all"], by[l[1]]} {
				c.n++
				if got.Class == s.class {
					c.right++
				}
				if l[0] == string(s.class) {
					c.agree++
					if got.Class == s.class {
						c.agreedRight++
					}
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(by)) {
		c := by[k]
		t.Logf("%s: %d relabelled; the labellings agree on %d (%.1f%%); explain's class right by the corpus's label %d (%.1f%%); on the agreed ones %d of %d (%.1f%%)",
			k, c.n, c.agree, pct(c.agree, c.n), c.right, pct(c.right, c.n), c.agreedRight, c.agree, pct(c.agreedRight, c.agree))
	}
	if by["all"].n == 0 {
		t.Error("no relabelled message found in the corpus")
	}
}

// loadRelabel reads "=== source | class | confidence" lines.
func loadRelabel(t *testing.T, path string) [][3]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][3]string
	for line := range strings.SplitSeq(string(b), "\n") {
		h, ok := strings.CutPrefix(line, "=== ")
		if !ok {
			continue
		}
		p := strings.Split(h, "|")
		if len(p) != 3 {
			t.Fatalf("%s: bad line %q", path, line)
		}
		c := strings.TrimSpace(p[1])
		if _, err := report.ParseClass(c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, [3]string{strings.TrimSpace(p[0]), c, strings.TrimSpace(p[2])})
	}
	return out
}
