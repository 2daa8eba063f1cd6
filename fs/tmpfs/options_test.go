package tmpfs

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testRAMPages is a host with 23.5 GiB of RAM (the figures below were
// read from a kernel tmpfs mounted on such a host).
const testRAMPages = 6170887

func TestParseMountOptions(t *testing.T) {
	def := MountOptions{Mode: DefaultRootMode}
	size := func(blocks uint64) MountOptions {
		return MountOptions{Blocks: blocks, BlocksSet: true, Mode: DefaultRootMode}
	}
	inodes := func(n uint64) MountOptions { return MountOptions{Inodes: n, InodesSet: true, Mode: DefaultRootMode} }
	mode := func(m uint32) MountOptions { return MountOptions{Mode: m} }
	bad := func(key string) string { return "tmpfs: Bad value for '" + key + "'" }
	tests := []struct {
		data string
		want MountOptions
		err  string
	}{
		{"", def, ""},
		{",,", def, ""},
		// size= in bytes, rounded up to whole pages (DIV_ROUND_UP).
		{"size=0", size(0), ""},
		{"size=1", size(1), ""},
		{"size=4096", size(1), ""},
		{"size=4097", size(2), ""},
		{"size=1k", size(1), ""},
		{"size=1K", size(1), ""},
		{"size=5k", size(2), ""},
		{"size=1m", size(256), ""},
		{"size=64M", size(16384), ""},
		{"size=1g", size(262144), ""},
		{"size=1t", size(1 << 28), ""},
		{"size=1p", size(1 << 38), ""},
		{"size=1e", size(1 << 48), ""},
		{"size=8e", size(1 << 51), ""},
		// 16 EiB is 2^64: it wraps to 0, unlimited, as in the kernel.
		{"size=16e", size(0), ""},
		// Past 2^64 the number wraps too; and near it the rounding up.
		{"size=99999999999999999999", size(1896064363147520), ""},
		{"size=18446744073709551615", size(0), ""},
		// Base 0: hex and octal; "0x1e" is 30 bytes, not 1 EiB.
		{"size=0x10", size(1), ""},
		{"size=0X10", size(1), ""},
		{"size=0x1e", size(1), ""},
		{"size=0x1k", size(1), ""},
		{"size=010k", size(2), ""},
		{"size=08", MountOptions{}, bad("size")},
		{"size=0x", MountOptions{}, bad("size")},
		// No digits read as 0.
		{"size=k", size(0), ""},
		{"size=%", size(0), ""},
		// Shares of RAM.
		{"size=50%", size(3085444), ""},
		{"size=1%", size(61709), ""},
		{"size=100%", size(testRAMPages), ""},
		{"size=200%", size(2 * testRAMPages), ""},
		{"size=1k%", size(63189883), ""},
		{"size=1%k", MountOptions{}, bad("size")},
		{"size=", MountOptions{}, bad("size")},
		{"size", MountOptions{}, bad("size")},
		{"size=-1", MountOptions{}, bad("size")},
		{"size=+1", MountOptions{}, bad("size")},
		{"size= 1", MountOptions{}, bad("size")},
		{"size=1x", MountOptions{}, bad("size")},
		{"size=1kk", MountOptions{}, bad("size")},
		{"size=abc", MountOptions{}, bad("size")},
		{"size=1\n", MountOptions{}, bad("size")},
		// A comma before a digit does not end an option (mpol lists).
		{"size=1,2", MountOptions{}, bad("size")},
		{"size=1,mode=700", MountOptions{Blocks: 1, BlocksSet: true, Mode: 0700}, ""},

		{"nr_inodes=0", inodes(0), ""},
		{"nr_inodes=10", inodes(10), ""},
		{"nr_inodes=1k", inodes(1024), ""},
		{"nr_inodes=0x10", inodes(16), ""},
		{"nr_inodes=k", inodes(0), ""},
		{"nr_inodes=16e", inodes(0), ""},
		{"nr_inodes=18014398509481983", inodes(math.MaxUint64 / 1024), ""},
		{"nr_inodes=18014398509481984", MountOptions{}, bad("nr_inodes")},
		{"nr_inodes=1%", MountOptions{}, bad("nr_inodes")},
		{"nr_inodes=", MountOptions{}, bad("nr_inodes")},
		{"nr_inodes", MountOptions{}, bad("nr_inodes")},

		// mode= is octal (kstrtouint base 8) and keeps the permission bits.
		{"mode=755", mode(0755), ""},
		{"mode=0755", mode(0755), ""},
		{"mode=+755", mode(0755), ""},
		{"mode=755\n", mode(0755), ""},
		{"mode=0", mode(0), ""},
		{"mode=17777", mode(07777), ""},
		{"mode=37777777777", mode(07777), ""},
		{"mode=40000000000", MountOptions{}, bad("mode")},
		{"mode=8", MountOptions{}, bad("mode")},
		{"mode=-1", MountOptions{}, bad("mode")},
		{"mode=0x1", MountOptions{}, bad("mode")},
		{"mode=+", MountOptions{}, bad("mode")},
		{"mode=755\n\n", MountOptions{}, bad("mode")},
		{"mode=", MountOptions{}, bad("mode")},
		{"mode", MountOptions{}, bad("mode")},

		// Later options win.
		{"size=1m,size=2m,mode=700,mode=755", MountOptions{Blocks: 512, BlocksSet: true, Mode: 0755}, ""},
		{"size=1m,nr_inodes=5,mode=700", MountOptions{Blocks: 256, BlocksSet: true, Inodes: 5, InodesSet: true, Mode: 0700}, ""},
		// The first bad option is the one reported.
		{"size=x,mode=9", MountOptions{}, bad("size")},
		{"foo=1", MountOptions{}, "tmpfs: Unknown parameter 'foo'"},
		{"foo", MountOptions{}, "tmpfs: Unknown parameter 'foo'"},
		{"Size=1", MountOptions{}, "tmpfs: Unknown parameter 'Size'"},
		{"=1", MountOptions{}, "tmpfs: Unknown parameter ''"},
		{"ro", MountOptions{}, "tmpfs: Unknown parameter 'ro'"},
		{"uid=5", MountOptions{Mode: DefaultRootMode, UID: 5, UIDSet: true}, ""},
		{"gid=0x10,uid=0", MountOptions{Mode: DefaultRootMode, GID: 16, GIDSet: true, UIDSet: true}, ""},
		{"uid=4294967295", MountOptions{}, bad("uid")},
		{"gid=-1", MountOptions{}, bad("gid")},
		{"uid=", MountOptions{}, bad("uid")},
		{"inode64", MountOptions{}, "tmpfs: Unsupported parameter 'inode64'"},
		{"nr_blocks=10", MountOptions{}, "tmpfs: Unsupported parameter 'nr_blocks'"},
		{"size=1m,huge=always", MountOptions{}, "tmpfs: Unsupported parameter 'huge'"},
	}
	for _, tc := range tests {
		got, err := ParseMountOptions(tc.data, testRAMPages)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if errText != tc.err || got != tc.want {
			t.Errorf("ParseMountOptions(%q) = %+v, %q; want %+v, %q", tc.data, got, errText, tc.want, tc.err)
		}
	}
}

func TestMountOptionsSizeLimit(t *testing.T) {
	for _, tc := range []struct {
		blocks uint64
		want   int64
	}{
		{0, 0},
		{1, 4096},
		{1 << 40, 1 << 52},
		// 8 EiB does not fit an int64: capped a page below.
		{1 << 51, math.MaxInt64 &^ 4095},
		{1<<52 - 1, math.MaxInt64 &^ 4095},
	} {
		if got := (MountOptions{Blocks: tc.blocks, BlocksSet: true}).SizeLimit(); got != tc.want {
			t.Errorf("SizeLimit of %d blocks = %d, want %d", tc.blocks, got, tc.want)
		}
	}
}

// TestMountOptionsData: Data reads back as the same options.
func TestMountOptionsData(t *testing.T) {
	for _, tc := range []struct{ in, data string }{
		{"", "mode=1777"},
		{"size=1000", "mode=1777,size=4096"},
		{"size=0", "mode=1777,size=0"},
		{"size=50%", "mode=1777,size=12637978624"},
		{"size=15e", "mode=1777,size=17293822569102704640"},
		{"nr_inodes=0,mode=700", "mode=700,nr_inodes=0"},
		{"mode=0,nr_inodes=7,size=1m", "mode=0,size=1048576,nr_inodes=7"},
	} {
		o, err := ParseMountOptions(tc.in, testRAMPages)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Data(); got != tc.data {
			t.Errorf("Data of %q = %q, want %q", tc.in, got, tc.data)
		}
		back, err := ParseMountOptions(o.Data(), testRAMPages)
		if err != nil || back != o {
			t.Errorf("%q reads back as %+v, %v; want %+v", o.Data(), back, err, o)
		}
	}
}

func TestMemparse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    uint64
		rest string
	}{
		{"", 0, ""},
		{"12", 12, ""},
		{"12x", 12, "x"},
		{"x", 0, "x"},
		{"-1", 0, "-1"},
		{"0", 0, ""},
		{"0x", 0, "x"},
		{"0xfF", 255, ""},
		{"0xfz", 15, "z"},
		{"0xfg", 15 << 30, ""},
		{"017", 15, ""},
		{"019", 1, "9"},
		{"2K", 2048, ""},
		{"2kb", 2048, "b"},
		{"3E", 3 << 60, ""},
		{"18446744073709551616", 0, ""},
	} {
		n, rest := memparse(tc.in)
		if n != tc.n || rest != tc.rest {
			t.Errorf("memparse(%q) = %d, %q; want %d, %q", tc.in, n, rest, tc.n, tc.rest)
		}
	}
}

// TestParseMountOptionsLinux mounts a kernel tmpfs with each option
// string and checks that it takes the same options (f_blocks, f_files
// and the root's mode) or refuses them with the same message.
func TestParseMountOptionsLinux(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4k"); err != nil {
		t.Skipf("cannot mount a private tmpfs (%v): options are only unit-tested", err)
	}
	unix.Unmount(dir, unix.MNT_DETACH)
	ram := TotalRAMPages()
	inputs := []string{
		"", "size=0", "size=1", "size=4097", "size=5k", "size=1m", "size=1e", "size=8e", "size=16e",
		"size=99999999999999999999", "size=18446744073709551615", "size=0x1e", "size=0x1k", "size=010k",
		"size=08", "size=0x", "size=k", "size=%", "size=50%", "size=1%", "size=1k%", "size=1%k",
		"size=", "size", "size=-1", "size=+1", "size=1x", "size=1kk", "size=1,2", "size=1,mode=700",
		"nr_inodes=0", "nr_inodes=1k", "nr_inodes=k", "nr_inodes=16e", "nr_inodes=18014398509481983",
		"nr_inodes=18014398509481984", "nr_inodes=1%", "nr_inodes=", "nr_inodes",
		"mode=755", "mode=+755", "mode=755\n", "mode=17777", "mode=37777777777", "mode=40000000000",
		"mode=8", "mode=0x1", "mode=", "mode", "mode=+",
		"size=1m,size=2m,mode=700,mode=755", "size=x,mode=9", "foo=1", "foo", "Size=1", ",,size=8k,,",
	}
	mounted, messages := 0, 0
	for _, data := range inputs {
		ours, err := ParseMountOptions(data, ram)
		kernel, kerr := kernelMount(t, dir, data)
		switch {
		case err != nil && kerr == nil:
			t.Errorf("%q: the kernel takes it (%+v), the parser says %v", data, kernel, err)
		case err == nil && kerr != nil:
			t.Errorf("%q: the kernel refuses it (%v), the parser gives %+v", data, kerr, ours)
		case err != nil:
			if msg := kernelMessage(t, data); msg != "" {
				messages++
				if msg != err.Error() {
					t.Errorf("%q: the kernel says %q, the parser %q", data, msg, err)
				}
			}
		default:
			want := ours
			// Linux's defaults: half of RAM each.
			if !want.BlocksSet {
				want.Blocks = ram / 2
			}
			if !want.InodesSet {
				want.Inodes = ram / 2
			}
			want.BlocksSet, want.InodesSet = false, false
			mounted++
			if kernel != want {
				t.Errorf("%q: the kernel mounts %+v, the parser gives %+v", data, kernel, want)
			}
			// Data, which "sentry diff" mounts natively, gives the
			// kernel the same limits.
			again, err := kernelMount(t, dir, ours.Data())
			if err != nil || again != kernel {
				t.Errorf("%q: its Data %q mounts %+v, %v; want %+v", data, ours.Data(), again, err, kernel)
			}
		}
	}
	t.Logf("%d option strings: %d mounted alike, %d refused with the kernel's message", len(inputs), mounted, messages)
}

// kernelMount mounts a kernel tmpfs on dir with data and returns what it
// took (Blocks and Inodes from statfs, Mode of its root), and unmounts it.
func kernelMount(t *testing.T, dir, data string) (MountOptions, error) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, data); err != nil {
		return MountOptions{}, err
	}
	defer func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Fatalf("unmounting %s: %v", dir, err)
		}
	}()
	var sfs unix.Statfs_t
	var st unix.Stat_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return MountOptions{Blocks: sfs.Blocks, Inodes: sfs.Files, Mode: st.Mode & 07777}, nil
}

// kernelMessage is the kernel's message for the first option of data it
// refuses, read from an fsopen context's log ("" when it cannot be had).
func kernelMessage(t *testing.T, data string) string {
	t.Helper()
	fd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	for _, opt := range splitOptions(data) {
		key, value, hasValue := strings.Cut(opt, "=")
		if hasValue {
			err = unix.FsconfigSetString(fd, key, value)
		} else {
			err = unix.FsconfigSetFlag(fd, key)
		}
		if err == nil {
			continue
		}
		buf := make([]byte, 256)
		n, rerr := unix.Read(fd, buf)
		if rerr != nil || n < 2 {
			return ""
		}
		// The log's lines start with their level: "e " for an error.
		return strings.TrimSuffix(strings.TrimPrefix(string(buf[:n]), "e "), "\n")
	}
	return ""
}

func TestNewMounts(t *testing.T) {
	specs := []MountSpec{
		{Point: "/tmp", Options: MountOptions{Mode: DefaultRootMode}},
		{Point: "/a", Options: mustParse(t, "size=1000,mode=700")},
		{Point: "/b", Options: mustParse(t, "size=1m,nr_inodes=5")},
		{Point: "/c", Options: mustParse(t, "nr_inodes=0")},
		{Point: "/d", Options: mustParse(t, "nr_inodes=7,mode=0")},
		{Point: "/e", Options: mustParse(t, "size=0")},
	}
	used := map[uint64]bool{unix.Mkdev(0, 100): true, unix.Mkdev(0, 102): true, unix.Mkdev(8, 101): true}
	h := Host{RAMPages: 1001, UsedDevs: used, RootUID: 1000, RootGID: 100}
	mounts, err := NewMounts(specs, h)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, m := range mounts {
			m.FS.Release()
		}
	}()
	want := []struct {
		minor         uint32
		super         string
		blocks, files uint64
		mode          uint32
	}{
		// No options: half of RAM for both limits.
		{101, "rw,size=2000k,nr_inodes=500,mode=1777", 500, 500, 01777},
		// Each limit not given takes half of RAM, whether or not the
		// other was given (shmem_fill_super).
		{103, "rw,size=4k,nr_inodes=500,mode=700", 1, 500, 0700},
		{104, "rw,size=1024k,nr_inodes=5,mode=1777", 256, 5, 01777},
		{105, "rw,size=2000k,nr_inodes=0,mode=1777", 500, 0, 01777},
		{106, "rw,size=2000k,nr_inodes=7,mode=0", 500, 7, 0},
		{107, "rw,size=0k,nr_inodes=500,mode=1777", 0, 500, 01777},
	}
	if len(mounts) != len(want) {
		t.Fatalf("%d mounts, want %d", len(mounts), len(want))
	}
	for i, m := range mounts {
		w := want[i]
		var st unix.Stat_t
		m.Root.Inode().Stat(&st)
		var sfs unix.Statfs_t
		m.FS.Statfs(&sfs)
		if m.Point != specs[i].Point || m.ID != uint64(1<<20+i) || m.SuperOptions != w.super ||
			m.Source != "tmpfs" || m.Options != "rw,nosuid,nodev,relatime" {
			t.Errorf("mount %d: %+v", i, m)
		}
		if st.Dev != unix.Mkdev(0, w.minor) || st.Mode != unix.S_IFDIR|w.mode || st.Uid != 1000 || st.Gid != 100 {
			t.Errorf("mount %d root: dev %d:%d mode %o owner %d:%d; want dev 0:%d mode %o owner 1000:100",
				i, unix.Major(st.Dev), unix.Minor(st.Dev), st.Mode, st.Uid, st.Gid, w.minor, unix.S_IFDIR|w.mode)
		}
		if sfs.Blocks != w.blocks || sfs.Files != w.files {
			t.Errorf("mount %d statfs: %d blocks, %d files; want %d, %d", i, sfs.Blocks, sfs.Files, w.blocks, w.files)
		}
	}
	if len(used) != 3 {
		t.Errorf("NewMounts changed the host's device set: %v", used)
	}

	// Without a RAM figure the defaults are unlimited.
	ms, err := NewMounts(specs[:1], Host{})
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	defer m.FS.Release()
	var sfs unix.Statfs_t
	m.FS.Statfs(&sfs)
	if sfs.Blocks != 0 || sfs.Files != 0 || m.SuperOptions != "rw,size=0k,mode=1777" {
		t.Errorf("no RAM: %d blocks, %d files, %q", sfs.Blocks, sfs.Files, m.SuperOptions)
	}
}

func mustParse(t *testing.T, data string) MountOptions {
	t.Helper()
	o, err := ParseMountOptions(data, 1001)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestNewScratchMount(t *testing.T) {
	m, err := NewScratchMount()
	if err != nil {
		t.Fatal(err)
	}
	defer m.FS.Release()
	var st unix.Stat_t
	m.Root.Inode().Stat(&st)
	if m.ID != 1<<20-1 || m.Point != "" || st.Mode != unix.S_IFDIR|0700 {
		t.Errorf("scratch mount: id %d point %q root mode %o", m.ID, m.Point, st.Mode)
	}
}

// TestHostProbes checks the host readers against what the host says
// elsewhere: the device of / is in use, and RAM matches /proc/meminfo.
func TestHostProbes(t *testing.T) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/mountinfo", &st); err != nil {
		t.Skip(err)
	}
	devs := HostDevices()
	if !devs[st.Dev] {
		t.Errorf("the device of /proc (%d:%d) is not among the host's: %v", unix.Major(st.Dev), unix.Minor(st.Dev), devs)
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip(err)
	}
	var kb uint64
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "MemTotal:" {
			for _, c := range f[1] {
				kb = kb*10 + uint64(c-'0')
			}
		}
	}
	if got := TotalRAMPages(); got != kb/4 {
		t.Errorf("TotalRAMPages = %d, MemTotal is %d kB = %d pages", got, kb, kb/4)
	}
}

// TestLedgerSharesRAM: default-sized mounts of sandboxes running at once
// share RAM: the first gets Linux's default (half), each next one half of
// what is not yet promised, so together they stay under RAM (two filling
// their defaults get ENOSPC, not the host's OOM killer); a released or
// dead sentry's promise goes back; a mount with size= takes nothing.
func TestLedgerSharesRAM(t *testing.T) {
	l := Ledger{Dir: t.TempDir()}
	const ram = 1 << 20
	a, relA, err := l.reserve(ram)
	if err != nil {
		t.Fatal(err)
	}
	b, relB, _ := l.reserve(ram)
	c, relC, _ := l.reserve(ram)
	if a != ram/2 || b != ram/4 || c != ram/8 {
		t.Errorf("promised %d, %d, %d; want %d, %d, %d", a, b, c, ram/2, ram/4, ram/8)
	}
	relA()
	d, relD, _ := l.reserve(ram)
	if d != (ram-b-c)/2 {
		t.Errorf("after the first went: %d, want %d", d, (ram-b-c)/2)
	}
	relB()
	relC()
	relD()
	// A dead sentry's promise (a pid that is not running) goes back.
	os.WriteFile(filepath.Join(l.Dir, "999999999-1-x"), []byte("524288\n"), 0o600)
	if e, relE, _ := l.reserve(ram); e != ram/2 {
		t.Errorf("a dead sentry's promise still counts: %d", e)
	} else {
		relE()
	}
	// Mounts through NewMounts take from the ledger only without size=.
	specs := []MountSpec{{Point: "/a", Options: MountOptions{Mode: 0777}}, {Point: "/b", Options: mustParse(t, "size=4k")}}
	ms, err := NewMounts(specs, Host{RAMPages: ram, Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(l.Dir)
	if len(entries) != 2 { // .lock and /a's promise
		t.Errorf("ledger holds %d entries, want the lock and one promise", len(entries))
	}
	for _, m := range ms {
		m.FS.Release()
	}
	entries, _ = os.ReadDir(l.Dir)
	if len(entries) != 1 {
		t.Errorf("promises left after release: %d", len(entries)-1)
	}
	// A guest's own mount without size= gets Linux's default and takes
	// nothing from the ledger: each took half of what was left,
	// host-wide, and kept it for the sentry's life, so a guest that
	// mounted a few left every sandbox after it a one-page /tmp.
	mt := NewMounter(Host{RAMPages: ram, Ledger: l})
	for range 3 {
		m, err := mt.NewMount("none", "", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer m.FS.Release()
		if got := m.SuperOptions; got != "" {
			t.Errorf("guest mount's options %q, want Linux's default size", got)
		}
	}
	if entries, _ = os.ReadDir(l.Dir); len(entries) != 1 {
		t.Errorf("a guest's mounts took %d promises", len(entries)-1)
	}
	if f, relF, _ := l.reserve(ram); f != ram/2 {
		t.Errorf("after a guest's mounts a sandbox gets %d pages, want %d", f, ram/2)
	} else {
		relF()
	}
}
