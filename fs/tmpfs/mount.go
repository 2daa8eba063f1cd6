package tmpfs

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// firstAnonMinor is where the search for a mount's device number starts:
// each tmpfs gets an anonymous device 0:N, as Linux's get_anon_bdev gives
// it, but well above the minors the host's own anonymous mounts take
// (Linux hands them out from 1 up), so a host mount made after the
// sentry started is unlikely to take the same number; those in use at
// start are skipped.
const firstAnonMinor = 100

// firstMountID is the mount id (statx's stx_mnt_id, mountinfo's first
// field) of the first tmpfs mount, the next ones counting up: far above
// the small ids Linux gives the host's mounts (mnt_alloc_id counts from
// the bottom), so a guest never sees one of the sentry's mounts under a
// host mount's id.
const firstMountID = 1 << 20

// scratchMountID is the scratch mount's id, just below the tmpfs mounts'.
const scratchMountID = firstMountID - 1

// MountSpec is one tmpfs to mount: the point in the guest's tree (absolute
// and clean) and its options.
type MountSpec struct {
	Point   string
	Options MountOptions
}

// Host is what mounting takes from the host.
type Host struct {
	// RAMPages is totalram_pages(): size= and nr_inodes= not given
	// default to half of it (shmem_default_max_blocks,
	// shmem_default_max_inodes). 0 leaves them unlimited.
	RAMPages uint64
	// UsedDevs are the st_dev numbers of the host's mounts: no tmpfs
	// takes one, so the guest can tell the tmpfs from them.
	UsedDevs map[uint64]bool
	// RootUID and RootGID own every mount's root directory.
	RootUID, RootGID uint32
	// Ledger shares RAM among the default-sized mounts of the sandboxes
	// running at once (ledger.go).
	Ledger Ledger
}

// CurrentHost reads Host's RAM and devices from the running host, for mounts
// whose root the caller's effective ids own.
func CurrentHost() Host {
	return Host{
		RAMPages: TotalRAMPages(),
		UsedDevs: HostDevices(),
		RootUID:  uint32(os.Geteuid()),
		RootGID:  uint32(os.Getegid()),
		Ledger:   Ledger{Dir: DefaultLedgerDir},
	}
}

// NewMounts makes a tmpfs for each spec, in order, each with its own
// anonymous device number, mount id and store (storage.go); on failure,
// those made are released.
func NewMounts(specs []MountSpec, h Host) ([]*vfs.Mount, error) {
	return NewMounter(h).Mounts(specs)
}

// Mounts is NewMounts with mt's devices and ids.
func (mt *Mounter) Mounts(specs []MountSpec) ([]*vfs.Mount, error) {
	var out []*vfs.Mount
	for _, s := range specs {
		m, err := mt.newMount(s.Point, "tmpfs", s.Options, true)
		if err != nil {
			for _, m := range out {
				m.FS.Release()
			}
			return nil, fmt.Errorf("tmpfs %s: %w", s.Point, err)
		}
		m.Options = "rw,nosuid,nodev,relatime"
		out = append(out, m)
	}
	return out, nil
}

// Mounter makes tmpfs mounts: the sandbox's own and those the guest asks
// for with mount(2) (vfs.Mounter), each with an anonymous device number
// and a mount id of its own.
type Mounter struct {
	mu     sync.Mutex
	host   Host
	used   map[uint64]bool
	minor  uint32
	nextID uint64
}

// NewMounter returns a Mounter whose first mount gets the first id.
func NewMounter(h Host) *Mounter {
	used := make(map[uint64]bool, len(h.UsedDevs))
	for d := range h.UsedDevs {
		used[d] = true
	}
	return &Mounter{host: h, used: used, minor: firstAnonMinor, nextID: firstMountID}
}

// NewMount implements vfs.Mounter: a tmpfs with mount(2)'s options data
// (EINVAL for one shmem_parse_one refuses or the sentry does not model),
// its root owned by uid and gid unless uid= or gid= say otherwise
// (shmem_fill_super takes the mounter's fsuid and fsgid). Its size and
// inodes default to Linux's halves of RAM.
func (mt *Mounter) NewMount(source, data string, uid, gid uint32) (*vfs.Mount, error) {
	o, err := ParseMountOptions(data, mt.host.RAMPages)
	if err != nil {
		return nil, unix.EINVAL
	}
	if !o.UIDSet {
		o.UID = uid
	}
	if !o.GIDSet {
		o.GID = gid
	}
	o.UIDSet, o.GIDSet = true, true
	return mt.newMount("", source, o, false)
}

// newMount makes one tmpfs; ledger: a default size is a share of the
// RAM the sandboxes running share (the sandbox's own mounts).
func (mt *Mounter) newMount(point, source string, o MountOptions, ledger bool) (*vfs.Mount, error) {
	mt.mu.Lock()
	for mt.used[unix.Mkdev(0, mt.minor)] {
		mt.minor++
	}
	dev := unix.Mkdev(0, mt.minor)
	mt.used[dev] = true
	id := mt.nextID
	mt.nextID++
	mt.mu.Unlock()
	h := mt.host
	// Each limit not given takes Linux's default, whether or not the
	// other was given (shmem_fill_super: SHMEM_SEEN_BLOCKS and
	// SHMEM_SEEN_INODES are separate).
	release := func() {}
	if !o.BlocksSet {
		// Linux's own default, for a guest's mount and where there is no
		// ledger to share with. A guest's mount takes no promise: each
		// one it made took half of what the ledger had left, host-wide,
		// and kept it until the sentry ended (its release was dropped),
		// so a guest that mounted a few tmpfs left every sandbox started
		// after it a /tmp of one page.
		o.Blocks = h.RAMPages / 2
		if ledger {
			if pages, rel, err := h.Ledger.reserve(h.RAMPages); err == nil {
				o.Blocks, release = pages, rel
			}
		}
	}
	if !o.InodesSet {
		o.Inodes = h.RAMPages / 2
	}
	rootUID, rootGID := h.RootUID, h.RootGID
	if o.UIDSet {
		rootUID = o.UID
	}
	if o.GIDSet {
		rootGID = o.GID
	}
	fs, err := New(Options{
		Dev:       dev,
		SizeLimit: o.SizeLimit(),
		MaxInodes: int64(o.Inodes),
		RootMode:  o.Mode,
		RootUID:   rootUID,
		RootGID:   rootGID,
		OnRelease: release,
	})
	if err != nil {
		release()
		return nil, err
	}
	m := &vfs.Mount{Point: point, Root: fs.Root(), ID: id, FS: fs, Source: source}
	if ledger {
		m.SuperOptions = superOptions(o)
	} else {
		m.SuperOptions = guestSuperOptions(o, h.RAMPages, rootUID, rootGID)
	}
	return m, nil
}

// guestSuperOptions is a guest's mount's super options in mountinfo, after
// the rw or ro word, as shmem_show_options words them: each limit that is
// not the default, mode when not 1777, owners other than root.
func guestSuperOptions(o MountOptions, ramPages uint64, uid, gid uint32) string {
	var s string
	if o.Blocks != ramPages/2 {
		s += ",size=" + strconv.FormatUint(o.Blocks*(pageSize/1024), 10) + "k"
	}
	if o.Inodes != ramPages/2 {
		s += ",nr_inodes=" + strconv.FormatUint(o.Inodes, 10)
	}
	if o.Mode != DefaultRootMode {
		s += ",mode=" + fmt.Sprintf("%03o", o.Mode)
	}
	if uid != 0 {
		s += ",uid=" + strconv.FormatUint(uint64(uid), 10)
	}
	if gid != 0 {
		s += ",gid=" + strconv.FormatUint(uint64(gid), 10)
	}
	return s
}

// superOptions is the mount's super options in /proc/self/mountinfo, as
// shmem_show_options words them: size in KiB, nr_inodes when limited or
// given, mode in octal.
func superOptions(o MountOptions) string {
	s := "rw,size=" + strconv.FormatUint(o.Blocks*(pageSize/1024), 10) + "k"
	if o.Inodes > 0 || o.InodesSet {
		s += ",nr_inodes=" + strconv.FormatUint(o.Inodes, 10)
	}
	return s + ",mode=" + strconv.FormatUint(uint64(o.Mode), 8)
}

// NewScratchMount is an unmounted tmpfs the sentry keeps files of its own
// in (the contents of /proc files it serves), readable by root alone.
func NewScratchMount() (*vfs.Mount, error) {
	fs, err := New(Options{RootMode: 0700})
	if err != nil {
		return nil, fmt.Errorf("scratch tmpfs: %w", err)
	}
	return &vfs.Mount{Point: "", Root: fs.Root(), ID: scratchMountID, FS: fs}, nil
}

// TotalRAMPages is the host's totalram_pages(), from sysinfo(2); 0 when
// that fails.
func TotalRAMPages() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit) / pageSize
}

// HostDevices are the st_dev numbers of the host's mounts, from
// /proc/self/mountinfo; none when it cannot be read.
func HostDevices() map[uint64]bool {
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

// Reconfigure implements vfs.Reconfigurer: a remount's options data,
// parsed as NewMount parses it (EINVAL for what it refuses), of which
// size= and nr_inodes= change the limits (shmem_reconfigure; mode=,
// uid= and gid= are the new mount's alone). The mount's super options
// follow.
func (mt *Mounter) Reconfigure(m *vfs.Mount, data string) error {
	o, err := ParseMountOptions(data, mt.host.RAMPages)
	if err != nil {
		return unix.EINVAL
	}
	fs, ok := m.FS.(*Filesystem)
	if !ok {
		return unix.EINVAL
	}
	if !o.BlocksSet && !o.InodesSet {
		return nil
	}
	pages := o.SizeLimit() / pageSize
	if err := fs.resize(pages, o.BlocksSet, int64(o.Inodes), o.InodesSet); err != nil {
		return err
	}
	cur := MountOptions{Blocks: uint64(fs.maxPages.Load()), Mode: fs.opts.RootMode}
	fs.mu.RLock()
	cur.Inodes = uint64(fs.maxInodes)
	fs.mu.RUnlock()
	m.SetSuperOptions(guestSuperOptions(cur, mt.host.RAMPages, fs.opts.RootUID, fs.opts.RootGID))
	return nil
}
