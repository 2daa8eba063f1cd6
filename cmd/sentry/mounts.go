package main

import (
	"fmt"
	"os"
	"path"
	"strings"

	"sentry/fs/tmpfs"
	"sentry/sentry"
	"sentry/sentry/vfs"
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

// releaseMounts frees the mounts' host stores once the guest is gone.
func releaseMounts(ms []*vfs.Mount) {
	for _, m := range ms {
		if m != nil {
			m.FS.Release()
		}
	}
}

// sweepStores removes the private directories of sentries that were
// killed: fallback stores (fs/tmpfs/storage.go), and the shadow and
// special-file directories of earlier versions.
func sweepStores() {
	for _, base := range []string{"/dev/shm", os.TempDir()} {
		sentry.SweepPrivateDirs(base, "store")
		sentry.SweepPrivateDirs(base, "shadow")
	}
	sentry.SweepPrivateDirs(os.TempDir(), "special")
}
