package runtimeconfig

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// corpusCase is one node of testdata/corpus: a node tree as a distribution generates it (root/) and
// case.txt with its SOURCE and what the runtime's own code says it does with it.
type corpusCase struct {
	name, split, image, version, proxy, config string
	hosts, roles, errors, notes, headers, cas  []string
	versionSet                                 bool
}

func readCase(t *testing.T, dir string) corpusCase {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "case.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := corpusCase{name: filepath.Base(dir)}
	sc := bufio.NewScanner(f)
	source := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# SOURCE:") {
			source = true
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "split":
			c.split = v
		case "image":
			c.image = v
		case "version":
			c.version, c.versionSet = v, true
		case "hosts":
			c.hosts = strings.Fields(v)
		case "roles": // of each host, in order (a [host] that is the server itself is the registry)
			c.roles = strings.Fields(v)
		case "errors":
			c.errors = strings.Fields(v)
		case "notes":
			c.notes = strings.Fields(v)
		case "proxy":
			c.proxy = v
		case "header":
			c.headers = append(c.headers, v)
		case "config": // the containerd config file the runtime starts with: it must be among the files read
			c.config = v
		case "ca": // "URL file": that host trusts that CA file
			c.cas = append(c.cas, v)
		}
	}
	if !source || c.image == "" || len(c.hosts) == 0 || (c.split != "tuned" && c.split != "heldout") {
		t.Fatalf("%s: case.txt needs a # SOURCE: note, split tuned|heldout, image and hosts", dir)
	}
	return c
}

// check returns what differs between the loaded configuration and the case.
func (c corpusCase) check(cfg *Config) []string {
	var bad []string
	if got := urls(cfg); !slices.Equal(got, c.hosts) {
		bad = append(bad, "hosts "+strings.Join(got, " ")+", want "+strings.Join(c.hosts, " "))
	}
	if c.roles != nil {
		var got []string
		for _, h := range cfg.Hosts {
			got = append(got, h.Role)
		}
		if !slices.Equal(got, c.roles) {
			bad = append(bad, "roles "+strings.Join(got, " ")+", want "+strings.Join(c.roles, " "))
		}
	}
	var errs, all []string
	for _, w := range cfg.Warnings {
		all = append(all, w.Code)
		if w.Severity == SeverityError && !slices.Contains(errs, w.Code) {
			errs = append(errs, w.Code)
		}
	}
	slices.Sort(errs)
	want := slices.Clone(c.errors)
	slices.Sort(want)
	if !slices.Equal(errs, want) {
		bad = append(bad, "errors "+strings.Join(errs, " ")+", want "+strings.Join(want, " "))
	}
	for _, n := range c.notes {
		if !slices.Contains(all, n) {
			bad = append(bad, "no "+n+" among "+strings.Join(all, " "))
		}
	}
	for _, h := range c.headers { // "Name: value" on every host
		k, v, _ := strings.Cut(h, ": ")
		for _, host := range cfg.Hosts {
			if !slices.Contains(host.Header[k], v) {
				bad = append(bad, host.URL+" lacks header "+h)
			}
		}
	}
	if c.config != "" && !slices.Contains(cfg.Files, c.config) {
		bad = append(bad, c.config+" not read (read: "+strings.Join(cfg.Files, " ")+")")
	}
	for _, ca := range c.cas {
		u, f, _ := strings.Cut(ca, " ")
		i := slices.IndexFunc(cfg.Hosts, func(h Host) bool { return h.URL == u })
		if i < 0 || !slices.Contains(cfg.Hosts[i].CA, f) {
			bad = append(bad, u+" does not trust "+f)
		}
	}
	if c.versionSet && cfg.Version != c.version {
		bad = append(bad, "version "+cfg.Version+", want "+c.version)
	}
	if len(cfg.Hosts) > 0 {
		p := cfg.Hosts[0].Proxy
		if p == "" {
			p = "direct"
		}
		if c.proxy != "" && p != c.proxy {
			bad = append(bad, "first host's proxy "+p+", want "+c.proxy)
		}
	}
	return bad
}

// TestCorpus loads every node of the distribution corpus and compares it with what the runtime's
// code says. The held-out cases were written with the tuned ones and not looked at while tuning;
// the figures for each part are logged.
func TestCorpus(t *testing.T) {
	dirs, err := filepath.Glob("testdata/corpus/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	pass := map[string]int{}
	total := map[string]int{}
	for _, dir := range dirs {
		c := readCase(t, dir)
		t.Run(c.name, func(t *testing.T) {
			total[c.split]++
			cfg, err := Load(Options{Root: os.DirFS(filepath.Join(dir, "root")), Name: "/", Image: c.image})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if bad := c.check(cfg); len(bad) > 0 {
				t.Errorf("%s (%s): %s", c.name, c.split, strings.Join(bad, "; "))
				return
			}
			pass[c.split]++
		})
	}
	t.Logf("corpus: tuned %d/%d, held-out %d/%d", pass["tuned"], total["tuned"], pass["heldout"], total["heldout"])
}
