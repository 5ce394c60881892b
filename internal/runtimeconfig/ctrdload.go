package runtimeconfig

import (
	"encoding/base64"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// containerd reads its configuration as follows (cmd/containerd/server/config/config.go,
// LoadConfigWithPlugins, and plugins/cri/images/plugin.go configMigration; read at containerd
// main of 2026-12, v2.4.0-beta.0-70, and checked against the v1.6, v1.7, v2.0–v2.3 tags):
//  1. the main file, then its imports (globs, relative to the importing file), breadth first;
//  2. containerd 2.x migrates each file on its own from its `version` (unset = 1) to the current
//     one (3 for 2.0–2.2, 4 for 2.3+): version 1 plugin names ("cri") become URIs
//     ("io.containerd.grpc.v1.cri"), and while the file's version is below the current one, the
//     CRI image keys of [plugins."io.containerd.grpc.v1.cri"] (registry, max_concurrent_downloads,
//     image_pull_with_sync_fs; containerd.snapshotter, disable_snapshot_annotations,
//     discard_unpacked_layers) are copied over [plugins."io.containerd.cri.v1.images"], each key
//     replacing the one there: a version-2 file's grpc.v1.cri registry table wins over its
//     cri.v1.images one. The 2.x tables are read whatever the version says;
//  3. files are merged in load order: 2.x merges plugin tables key by key (a later leaf wins);
//     1.x replaces a plugin's whole table with the later file's (before containerd commit
//     a21e379b, first released in 2.0), so a drop-in that touches the CRI plugin drops the main
//     file's registry settings;
//  4. containerd 1.x refuses a file of version 3 or more and does not start.

// ctrdDoc is one containerd config file, its plugins as containerd sees them after migration.
type ctrdDoc struct {
	file    string
	version int // as written; 0 when unset
	plugins map[string]any
	raw     map[string]any // the CRI tables before migration, for the shadowing check
	b       []byte
}

const (
	criV1     = "io.containerd.grpc.v1.cri" // the 1.x CRI plugin; 2.x's migration source
	criImages = "io.containerd.cri.v1.images"
)

// loadContainerd reads config.toml and its imports as the node's containerd version does.
func (l *loader) loadContainerd() (*ctrdConfig, error) {
	c := &ctrdConfig{mirrors: map[string][]string{}, tls: map[string]legacyTLS{}, auth: map[string]legacyAuth{}}
	main := l.configFile()
	var docs []ctrdDoc
	loaded := map[string]bool{}
	pending := []string{main}
	for len(pending) > 0 {
		f := pending[0]
		pending = pending[1:]
		if loaded[f] {
			continue
		}
		loaded[f] = true
		b, err := l.readFile(f)
		if err != nil {
			if f == main && !l.root.Exists(f) {
				break // containerd's built-in defaults
			}
			return nil, err
		}
		var m map[string]any
		if _, err := toml.Decode(string(b), &m); err != nil {
			return nil, fmt.Errorf("%s: %v", l.root.show(f), err)
		}
		l.read(f)
		d := ctrdDoc{file: f, b: b}
		if v, ok := m["version"].(int64); ok {
			d.version = int(v)
		}
		d.plugins, _ = m["plugins"].(map[string]any)
		docs = append(docs, d)
		if imps, ok := m["imports"]; ok {
			pats, err := strings1(imps)
			if err != nil {
				return nil, fmt.Errorf("%s: imports: %v", l.root.show(f), err)
			}
			for _, pat := range pats {
				if !path.IsAbs(pat) {
					pat = path.Join(path.Dir(f), pat)
				}
				if !strings.Contains(pat, "*") {
					pending = append(pending, path.Clean(pat))
					continue
				}
				matches, err := l.glob(pat)
				if err != nil {
					return nil, err
				}
				pending = append(pending, matches...)
			}
		}
	}
	c.major = l.containerdMajor(docs)
	c.proven2 = slices.ContainsFunc(docs, func(d ctrdDoc) bool { return d.version >= 3 })
	target := l.configVersion()
	merged := map[string]any{}
	var regDocs []ctrdDoc // the files whose registry settings survive, in order
	for _, d := range docs {
		if c.major == 1 {
			if d.version >= 3 {
				l.warn(WarnConfigInvalid, fmt.Sprintf("%s has version = %d: containerd %s supports versions 1 and 2 only and does not start", d.file, d.version, l.cfg.Version),
					"write version = 2 with the [plugins.\"io.containerd.grpc.v1.cri\"] tables, or upgrade containerd to 2.x", d.file)
			}
			p := v1Names(d.plugins, d.version)
			if cri, ok := p[criV1]; ok {
				merged[criV1] = cri // 1.x: the later file's table replaces the plugin's
				regDocs = []ctrdDoc{{file: d.file, b: d.b, version: d.version, plugins: p}}
			}
			continue
		}
		d.plugins = v1Names(d.plugins, d.version)
		if d.version >= 3 && d.version >= target {
			if r := docRegistry(d, criV1); r != nil {
				if _, ok := r["config_path"].(string); ok {
					c.ignoredPath = fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.HasPrefix(s, "config_path") }))
				}
			}
		}
		d.raw = map[string]any{}
		maps.Copy(d.raw, d.plugins)
		if max(d.version, 1) < target {
			l.migrateCRIImages(d)
		}
		deepMerge(merged, d.plugins)
		if _, ok := d.plugins[criImages]; ok {
			regDocs = append(regDocs, d)
		}
	}
	table := criImages
	if c.major == 1 {
		table = criV1
	}
	c.images, _ = merged[table].(map[string]any)
	reg, _ := c.images["registry"].(map[string]any)
	c.table = l.registryTable(c.major, docs, target)
	// where each surviving setting came from: the last file that set it
	for _, d := range regDocs {
		r := docRegistry(d, table)
		if r == nil {
			continue
		}
		if _, ok := r["config_path"].(string); ok {
			c.pathSource = fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.HasPrefix(s, "config_path") }))
		}
		if ms, ok := r["mirrors"].(map[string]any); ok && len(ms) > 0 {
			c.legacySrc = fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.Contains(s, ".mirrors") }))
		}
		if cs, ok := r["configs"].(map[string]any); ok {
			for host, v := range cs {
				ct, _ := v.(map[string]any)
				if _, ok := ct["auth"].(map[string]any); ok {
					c.auth[host] = legacyAuth{source: fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.Contains(s, ".auth") }))}
				}
				if _, ok := ct["tls"].(map[string]any); ok && c.legacySrc == "" {
					c.legacySrc = fmt.Sprintf("%s:%d", d.file, lineOf(d.b, func(s string) bool { return strings.Contains(s, ".configs") }))
				}
			}
		}
	}
	if reg == nil {
		reg = map[string]any{}
	}
	if cp, ok := reg["config_path"].(string); ok {
		c.configPath = cp
	}
	if hs, ok := reg["headers"].(map[string]any); ok {
		c.headers = map[string][]string{}
		for k, v := range hs {
			vals, err := strings1(v)
			if err != nil {
				return nil, fmt.Errorf("%s: registry.headers.%s: %v", l.configFile(), k, err)
			}
			c.headers[k] = vals
		}
	}
	if ms, ok := reg["mirrors"].(map[string]any); ok {
		for host, v := range ms {
			mt, _ := v.(map[string]any)
			eps, err := strings1(mt["endpoint"])
			if err != nil {
				return nil, fmt.Errorf("%s: registry.mirrors.%q.endpoint: %v", c.legacySrc, host, err)
			}
			c.mirrors[host] = eps
		}
	}
	if cs, ok := reg["configs"].(map[string]any); ok {
		for host, v := range cs {
			ct, _ := v.(map[string]any)
			if a, ok := ct["auth"].(map[string]any); ok {
				la := c.auth[host]
				la.username, _ = a["username"].(string)
				la.password, _ = a["password"].(string)
				la.identityToken, _ = a["identitytoken"].(string)
				if enc, _ := a["auth"].(string); enc != "" && la.username == "" {
					if raw, err := base64.StdEncoding.DecodeString(enc); err == nil {
						la.username, la.password, _ = strings.Cut(string(raw), ":")
					}
				}
				c.auth[host] = la
			}
			t, _ := ct["tls"].(map[string]any)
			if t == nil {
				continue
			}
			var lt legacyTLS
			lt.caFile, _ = t["ca_file"].(string)
			lt.certFile, _ = t["cert_file"].(string)
			lt.keyFile, _ = t["key_file"].(string)
			lt.skipVerify, _ = t["insecure_skip_verify"].(bool)
			c.tls[host] = lt
		}
	}
	// containerd 2.2+ (plugins/cri/images: set when both config_path and mirrors are empty, on Linux)
	if c.major == 2 && c.configPath == "" && len(c.mirrors) == 0 && l.cfg.Version != "" && !l.versionBefore(2, 2) {
		c.configPath, c.pathDflt, c.pathSource = "/etc/containerd/certs.d:/etc/docker/certs.d", true, "containerd "+l.cfg.Version+"'s default"
	}
	return c, nil
}

// containerdMajor says whose reading applies: the installed version when known; else 2 when a file
// has version 3+ or a 2.x plugin table, otherwise 1 (the two read such files alike, imports aside).
func (l *loader) containerdMajor(docs []ctrdDoc) int {
	if n, ok := ContainerdMajor(l.cfg.Version); ok {
		return n
	}
	for _, d := range docs {
		if d.version >= 3 {
			return 2
		}
		if _, ok := d.plugins[criImages]; ok {
			return 2
		}
	}
	return 1
}

// configVersion is the config version the installed containerd 2.x migrates to: 4 from 2.3, else 3.
func (l *loader) configVersion() int {
	if l.cfg.Version != "" && !l.versionBefore(2, 3) {
		return 4
	}
	return 3
}

// v1Names returns the plugins table with version-1 short names ("cri") as containerd's URIs.
func v1Names(p map[string]any, version int) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		if version <= 1 && k == "cri" {
			k = criV1
		}
		out[k] = v
	}
	return out
}

// migrateCRIImages is containerd 2.x's CRI image migration for one file below the current version.
func (l *loader) migrateCRIImages(d ctrdDoc) {
	src, ok := d.plugins[criV1].(map[string]any)
	if !ok {
		return
	}
	dst := map[string]any{}
	if old, ok := d.plugins[criImages].(map[string]any); ok {
		maps.Copy(dst, old)
	}
	if oldReg, ok := dst["registry"].(map[string]any); ok && src["registry"] != nil {
		l.warn(WarnRegistryShadowed, fmt.Sprintf("%s (version %d) has both [plugins.%q.registry] and [plugins.%q.registry]: containerd 2.x migrates the file and the first replaces the second, so its %s %s ignored",
			d.file, max(d.version, 1), criV1, criImages, keyList(oldReg), map[bool]string{true: "is", false: "are"}[len(oldReg) == 1]),
			fmt.Sprintf("keep one registry table: set version = 3 and move everything to [plugins.%q.registry]", criImages), d.file)
	}
	for _, k := range []string{"registry", "image_decryption", "max_concurrent_downloads", "image_pull_progress_timeout", "image_pull_with_sync_fs", "stats_collect_period"} {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
	if ctrd, ok := src["containerd"].(map[string]any); ok {
		for _, k := range []string{"snapshotter", "disable_snapshot_annotations", "discard_unpacked_layers"} {
			if v, ok := ctrd[k]; ok {
				dst[k] = v
			}
		}
	}
	d.plugins[criImages] = dst
}

func keyList(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, strconv.Quote(k))
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

// deepMerge merges src into dst as containerd 2.x merges plugin tables: tables key by key, any other
// value replaced.
func deepMerge(dst, src map[string]any) {
	for k, v := range src {
		sm, ok1 := v.(map[string]any)
		dm, ok2 := dst[k].(map[string]any)
		if ok1 && ok2 {
			cp := map[string]any{}
			maps.Copy(cp, dm)
			deepMerge(cp, sm)
			dst[k] = cp
			continue
		}
		if ok1 {
			cp := map[string]any{}
			deepMerge(cp, sm)
			dst[k] = cp
			continue
		}
		dst[k] = v
	}
}

// docRegistry is one file's registry table of the CRI image service, after migration.
func docRegistry(d ctrdDoc, table string) map[string]any {
	t, _ := d.plugins[table].(map[string]any)
	r, _ := t["registry"].(map[string]any)
	return r
}

// registryTable names the table a registry setting must be written in to take effect: a 2.x
// migration replaces the images registry table of a file below the current version with its
// grpc.v1.cri one, so a fix written in the wrong one would be dropped.
func (l *loader) registryTable(major int, docs []ctrdDoc, target int) string {
	if major == 1 {
		if len(docs) > 0 && docs[0].version <= 1 {
			return `[plugins.cri.registry]`
		}
		return `[plugins."io.containerd.grpc.v1.cri".registry]`
	}
	for _, d := range docs {
		if cri, ok := d.raw[criV1].(map[string]any); ok && cri["registry"] != nil && max(d.version, 1) < target {
			return fmt.Sprintf(`[plugins."io.containerd.grpc.v1.cri".registry] of %s (containerd 2.x migrates that version-%d file and that table wins)`, d.file, max(d.version, 1))
		}
	}
	return `[plugins."io.containerd.cri.v1.images".registry]`
}
