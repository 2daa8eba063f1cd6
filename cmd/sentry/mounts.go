package main

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

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
// killed: fallback stores (fs/tmpfs/storage.go), special-file directories
// of guests without a mount namespace (sentry/host_specials.go), and the
// shadow directories of earlier versions.
func sweepStores() {
	for _, base := range []string{"/dev/shm", os.TempDir()} {
		sentry.SweepPrivateDirs(base, "store")
		sentry.SweepPrivateDirs(base, "shadow")
	}
	sentry.SweepPrivateDirs(os.TempDir(), "special")
}

// mountPoints are the mount points of specs: the guest's namespace covers
// each (platform/launch/namespace.go).
func mountPoints(specs []tmpfs.MountSpec) []string {
	var out []string
	for _, m := range specs {
		out = append(out, m.Point)
	}
	return out
}

// specialInodes bounds the guest namespace's private directory of host
// special files (nr_inodes, 0 unlimited): no more than the sentry's mounts
// hold inodes.
func specialInodes(specs []tmpfs.MountSpec) uint64 {
	var n uint64
	for _, m := range specs {
		i := tmpfs.TotalRAMPages() / 2
		if m.Options.InodesSet {
			i = m.Options.Inodes
		}
		if i == 0 {
			return 0
		}
		n += i
	}
	return n
}

// startCwd is the guest's working directory: the sentry's, unless that is
// inside a tmpfs path. The guest then starts at the (deepest) mount point,
// which is the sandbox's directory, not the host's; a directory below it
// does not exist in the sandbox's fresh tmpfs, which is said once on
// stderr.
func startCwd(cwd string, specs []tmpfs.MountSpec) string {
	// The kernel's path of it, without the symlinks $PWD may hold.
	phys, err := unix.Getwd()
	if err != nil {
		return cwd
	}
	point := ""
	for _, m := range specs {
		if (phys == m.Point || strings.HasPrefix(phys, m.Point+"/")) && len(m.Point) > len(point) {
			point = m.Point
		}
	}
	if point == "" {
		return cwd
	}
	if phys != point {
		fmt.Fprintf(os.Stderr, "sentry: the working directory %s is hidden by the tmpfs at %s: the guest starts at %s\n", phys, point, point)
	}
	return point
}

// readIntFile is the integer in file name (a sysctl), or def.
func readIntFile(name string, def int) int {
	b, err := os.ReadFile(name)
	if err != nil {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return def
	}
	return n
}
