package runtimeconfig

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// countFS counts the opens of each name (files, and directories listed); a Stat is not one.
type countFS struct {
	fsys  fs.FS
	opens map[string]int
}

func (c countFS) Open(name string) (fs.File, error) {
	c.opens[name]++
	return c.fsys.Open(name)
}

func (c countFS) Stat(name string) (fs.FileInfo, error)  { return fs.Stat(c.fsys, name) }
func (c countFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(c.fsys, name) }
func (c countFS) ReadLink(name string) (string, error)   { return fs.ReadLink(c.fsys, name) }

// One load opens each file and lists each directory once, whatever steps read it: detecting the
// runtime and locating containerd's config both read config.toml, the --config lookup and the proxy
// reading both read the containerd unit, and every unit reads system.conf's drop-ins. Checked on
// every node of the corpus, with the runtime detected.
func TestLoadOpensEachFileOnce(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/corpus/*")
	if len(dirs) == 0 {
		t.Fatal("no corpus")
	}
	total := 0
	defer func() { t.Logf("%d opens over %d loads", total, len(dirs)) }()
	for _, dir := range dirs {
		c := readCase(t, dir)
		t.Run(c.name, func(t *testing.T) {
			cf := countFS{fsys: os.DirFS(filepath.Join(dir, "root")), opens: map[string]int{}}
			if _, err := Load(Options{Root: cf, Name: "/", Image: c.image}); err != nil {
				t.Fatal(err)
			}
			for name, n := range cf.opens {
				total += n
				if n > 1 {
					t.Errorf("%s opened %d times in one load", name, n)
				}
			}
			if c.config != "" {
				if rp, _ := (Root{FS: cf.fsys}).resolve(c.config); cf.opens[rp] != 1 {
					t.Errorf("%s (%s) opened %d times, want once", c.config, rp, cf.opens[rp])
				}
			}
		})
	}
}
