package main

import (
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/sentry"
)

// tmpfsFlag collects --tmpfs PATH[:OPTIONS] (repeatable; "none" mounts
// nothing).
type tmpfsFlag struct {
	specs []string
	set   bool
}

func (f *tmpfsFlag) String() string { return strings.Join(f.specs, ",") }

func (f *tmpfsFlag) Set(v string) error {
	if !f.set {
		f.specs = nil
		f.set = true
	}
	f.specs = append(f.specs, v)
	return nil
}

// parseTmpfs reads the --tmpfs specs, PATH[:OPTIONS] each: the options
// as a tmpfs mount takes them (fs/tmpfs ParseMountOptions).
func parseTmpfs(specs []string) ([]tmpfs.MountSpec, error) {
	var out []tmpfs.MountSpec
	seen := map[string]bool{}
	ramPages := tmpfs.TotalRAMPages()
	for _, s := range specs {
		if s == "none" {
			continue
		}
		p, opts, _ := strings.Cut(s, ":")
		if !path.IsAbs(p) {
			return nil, fmt.Errorf("--tmpfs %q: the mount point must be an absolute path", s)
		}
		p = path.Clean(p)
		if p == "/" {
			return nil, fmt.Errorf("--tmpfs %q: mounting over / is not supported", s)
		}
		if seen[p] {
			return nil, fmt.Errorf("--tmpfs %q: %s is mounted twice", s, p)
		}
		seen[p] = true
		o, err := tmpfs.ParseMountOptions(opts, ramPages)
		if err != nil {
			return nil, fmt.Errorf("--tmpfs %q: %w", s, err)
		}
		out = append(out, tmpfs.MountSpec{Point: p, Options: o})
	}
	return out, nil
}

// newShadowDir makes the private host directory for the tmpfs mounts'
// shadow files (after removing those of sentries that were killed) (fs/tmpfs/shadow.go), through which guests map tmpfs
// files: on a host tmpfs if one allows exec mappings (shared libraries in
// /tmp are mapped PROT_EXEC) and lets every user search it, else in the
// temporary directory. Searchable by all, listable by none (0711). ""
// when no candidate works: guests' mappings of tmpfs files are then
// snapshots, as without shadows.
func newShadowDir() string {
	for _, base := range []string{"/dev/shm", os.TempDir()} {
		sentry.SweepPrivateDirs(base, "shadow")
	}
	sentry.SweepPrivateDirs(os.TempDir(), "special")
	for _, base := range []string{"/dev/shm", os.TempDir()} {
		var fs unix.Statfs_t
		var st unix.Stat_t
		if unix.Statfs(base, &fs) != nil || fs.Flags&unix.ST_NOEXEC != 0 ||
			unix.Stat(base, &st) != nil || st.Mode&0o001 == 0 {
			continue
		}
		dir, err := os.MkdirTemp(base, sentry.PrivateDirPrefix("shadow"))
		if err != nil {
			continue
		}
		if os.Chmod(dir, 0o711) != nil {
			os.Remove(dir)
			continue
		}
		return dir
	}
	return ""
}
