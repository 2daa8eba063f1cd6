package main

import (
	"bufio"
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

// tmpfsFlag collects --tmpfs PATH[:size=N] (repeatable; "none" mounts
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

// mountSpec is one parsed --tmpfs.
type mountSpec struct {
	point string
	size  int64
	mode  uint32
}

func parseTmpfs(specs []string) ([]mountSpec, error) {
	var out []mountSpec
	seen := map[string]bool{}
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
		m := mountSpec{point: p, mode: 01777}
		for _, o := range strings.Split(opts, ",") {
			if o == "" {
				continue
			}
			k, v, _ := strings.Cut(o, "=")
			switch k {
			case "size":
				n, err := parseSize(v)
				if err != nil {
					return nil, fmt.Errorf("--tmpfs %q: size: %w", s, err)
				}
				m.size = n
			case "mode":
				n, err := strconv.ParseUint(v, 8, 32)
				if err != nil || n > 07777 {
					return nil, fmt.Errorf("--tmpfs %q: mode must be octal", s)
				}
				m.mode = uint32(n)
			default:
				return nil, fmt.Errorf("--tmpfs %q: unknown option %q (known: size, mode)", s, k)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// parseSize reads N, Nk, Nm, Ng (powers of 1024), as tmpfs's size=.
func parseSize(v string) (int64, error) {
	mult := int64(1)
	if v != "" {
		switch v[len(v)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult != 1 {
			v = v[:len(v)-1]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive size", v)
	}
	return n * mult, nil
}

// newMounts makes a tmpfs for each spec, each with a st_dev no host mount
// uses (an anonymous device 0:N, as Linux gives tmpfs), so the guest can
// tell it apart from the host's file systems.
func newMounts(specs []mountSpec) ([]*vfs.Mount, error) {
	used := hostDevices()
	minor := uint32(100)
	// Linux's tmpfs defaults: half of RAM for size and half of RAM's pages
	// for inodes (shmem_default_max_blocks, shmem_default_max_inodes).
	var si unix.Sysinfo_t
	var defaultSize, defaultInodes int64
	if unix.Sysinfo(&si) == nil {
		ram := int64(si.Totalram) * int64(si.Unit)
		defaultSize = ram / 2 &^ 4095
		defaultInodes = ram / 4096 / 2
	}
	var out []*vfs.Mount
	for i, s := range specs {
		for used[unix.Mkdev(0, minor)] {
			minor++
		}
		dev := unix.Mkdev(0, minor)
		used[dev] = true
		inodes := int64(0)
		if s.size == 0 {
			s.size, inodes = defaultSize, defaultInodes
		}
		fs, err := tmpfs.New(tmpfs.Options{
			Dev:       dev,
			SizeLimit: s.size,
			MaxInodes: inodes,
			RootMode:  s.mode,
			RootUID:   uint32(os.Getuid()),
			RootGID:   uint32(os.Getgid()),
		})
		if err != nil {
			releaseMounts(out)
			return nil, fmt.Errorf("--tmpfs %s: %w", s.point, err)
		}
		opts := "rw,nosuid,nodev,relatime"
		src := "tmpfs"
		super := "rw,size=" + strconv.FormatInt(s.size/1024, 10) + "k,mode=" + strconv.FormatUint(uint64(s.mode), 8)
		if inodes > 0 {
			super = "rw,size=" + strconv.FormatInt(s.size/1024, 10) + "k,nr_inodes=" + strconv.FormatInt(inodes, 10) +
				",mode=" + strconv.FormatUint(uint64(s.mode), 8)
		}
		out = append(out, &vfs.Mount{Point: s.point, Root: fs.Root(), ID: uint64(1<<20 + i), FS: fs,
			Source: src, Options: opts, SuperOptions: super})
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

// hostDevices are the st_dev numbers of the host's mounts.
func hostDevices() map[uint64]bool {
	used := map[uint64]bool{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return used
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		maj, min, ok := strings.Cut(fields[2], ":")
		if !ok {
			continue
		}
		a, _ := strconv.ParseUint(maj, 10, 32)
		b, _ := strconv.ParseUint(min, 10, 32)
		used[unix.Mkdev(uint32(a), uint32(b))] = true
	}
	return used
}

// newScratchMount is an unmounted tmpfs the sentry keeps files of its own
// in (the contents of /proc files it serves).
func newScratchMount() (*vfs.Mount, error) {
	fs, err := tmpfs.New(tmpfs.Options{RootMode: 0700})
	if err != nil {
		return nil, fmt.Errorf("scratch tmpfs: %w", err)
	}
	return &vfs.Mount{Point: "", Root: fs.Root(), ID: 1<<20 - 1, FS: fs}, nil
}
