package tmpfs

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// TestCheckDetects breaks a healthy tree in one way at a time, through the
// internals, and requires Check to name the problem.
func TestCheckDetects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(fs *Filesystem)
		want   string
	}{
		{"file nlink", func(fs *Filesystem) { in(fs, "d/f").nlink.Add(1) }, "names"},
		{"dir nlink", func(fs *Filesystem) { in(fs, "d").nlink.Add(1) }, "nlink"},
		{"dir size", func(fs *Filesystem) { in(fs, "d").size += 20 }, "size"},
		{"inode count", func(fs *Filesystem) { fs.inodes++ }, "inode count"},
		{"inode slots", func(fs *Filesystem) { fs.islots-- }, "slots"},
		{"used pages", func(fs *Filesystem) { fs.usedPages.Add(1) }, "used pages"},
		{"backing mode", func(fs *Filesystem) { fs.store.chmodFile(in(fs, "d/f").ino, 0600) }, "backing mode"},
		{"backing gone", func(fs *Filesystem) { fs.store.removeFile(in(fs, "e").ino) }, "backing"},
		{"leaked unlinked inode", func(fs *Filesystem) {
			i := in(fs, "d/f")
			delete(in(fs, "d").dir.entries, "f")
			dd := in(fs, "d").dir
			dd.order = dd.order[:len(dd.order)-1]
			in(fs, "d").size -= 20
			i.nlink.Store(0)
		}, "leaked"},
		{"unreachable linked inode", func(fs *Filesystem) {
			dd := in(fs, "d").dir
			delete(dd.entries, "f")
			dd.order = dd.order[:len(dd.order)-1]
			in(fs, "d").size -= 20
		}, "not reachable"},
		{"position order", func(fs *Filesystem) {
			dd := fs.root.inode.dir
			dd.order[0], dd.order[1] = dd.order[1], dd.order[0]
		}, "position"},
		{"wrong parent", func(fs *Filesystem) { dn(fs, "d/f").parent = fs.root }, "parent"},
		{"duplicate ino", func(fs *Filesystem) { in(fs, "s").ino = in(fs, "d").ino }, "twice"},
		{"symlink size", func(fs *Filesystem) { in(fs, "s").size = 1 }, "symlink"},
		{"freed but reachable", func(fs *Filesystem) { in(fs, "e").freed = true }, "freed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not newTestFS: the tree stays broken.
			fs, err := New(Options{RootMode: 0777})
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Release()
			mustMkdir(t, fs, "d", 0755, rootCreds)
			mustCreate(t, fs, "d/f", 0644, rootCreds)
			mustWrite(t, fs, "d/f", 0, []byte("data"))
			mustCreate(t, fs, "e", 0644, rootCreds)
			fs.Root().Symlink("s", "target", rootCreds)
			if err := fs.Check(); err != nil {
				t.Fatalf("healthy tree: %v", err)
			}
			tc.break_(fs)
			err = fs.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func dn(fs *Filesystem, p string) *dentry {
	d, err := walk(fs, p)
	if err != nil {
		panic(err)
	}
	return d.(*dentry)
}

func in(fs *Filesystem, p string) *inode { return dn(fs, p).inode }

// TestNoAllocs asserts that the hot paths do not allocate.
func TestNoAllocs(t *testing.T) {
	fs := newTestFS(t, Options{})
	d := mustMkdir(t, fs, "dir", 0755, rootCreds)
	f := mustCreate(t, fs, "dir/file", 0644, rootCreds)
	mustWrite(t, fs, "dir/file", 0, make([]byte, 8192))
	i := f.Inode()
	var st unix.Stat_t
	var stx unix.Statx_t
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Stat", func() { i.Stat(&st) }},
		{"Statx", func() { i.Statx(&stx) }},
		{"Lookup", func() {
			if _, err := d.Lookup("file"); err != nil {
				t.Fatal(err)
			}
		}},
		{"IncRef+DecRef", func() { i.IncRef(); i.DecRef() }},
		{"CheckPermission", func() { i.CheckPermission(userCreds, vfs.MayRead) }},
		{"Name+Parent+Mode", func() { _ = f.Name(); _ = f.Parent(); _ = i.Mode() }},
	} {
		if n := testing.AllocsPerRun(100, tc.f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tc.name, n)
		}
	}
}

// TestConcurrent runs namespace and data operations from many goroutines
// on a shared tree (for the race detector), then checks the result.
func TestConcurrent(t *testing.T) {
	fs := newTestFS(t, Options{SizeLimit: 1 << 20, MaxInodes: 200})
	root := fs.Root()
	mustMkdir(t, fs, "shared", 0777, rootCreds)
	shared := mustCreate(t, fs, "shared/f", 0666, rootCreds)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &vfs.Credentials{UID: uint32(g % 2 * 1000), GID: 1000}
			if c.UID == 0 {
				c.Caps = vfs.AllCaps
			}
			dir := fmt.Sprintf("g%d", g)
			d, err := root.Mkdir(dir, 0777, c)
			if err != nil {
				t.Error(err)
				return
			}
			sh, _ := walk(fs, "shared")
			buf := make([]byte, 100)
			for k := range 200 {
				name := fmt.Sprintf("f%d", k%7)
				switch k % 9 {
				case 0:
					d.Create(name, 0644, c)
				case 1:
					if e, err := d.Lookup(name); err == nil {
						e.Inode().IncRef()
						e.Inode().WriteAt(buf, int64(k*50), c)
						d.Unlink(name, c)
						e.Inode().ReadAt(buf, 0)
						e.Inode().DecRef()
					}
				case 2:
					d.Rename(name, sh, fmt.Sprintf("m%d-%d", g, k%3), 0, c)
				case 3:
					sh.Rename(fmt.Sprintf("m%d-%d", (g+1)%8, k%3), d, name, unix.RENAME_NOREPLACE, c)
				case 4:
					shared.Inode().WriteAt(buf, int64(k%20*100), c)
					shared.Inode().Append(buf[:10], c)
				case 5:
					shared.Inode().Truncate(int64(k%5*1000), nil)
				case 6:
					var st unix.Stat_t
					shared.Inode().Stat(&st)
					sh.IterDirents(0, func(ino uint64, next int64, typ uint8, name string) bool { return true })
				case 7:
					d.Mkdir("sub"+name, 0755, c)
					d.Rmdir("sub"+name, c)
				case 8:
					d.Symlink("l"+name, strings.Repeat("x", k), c)
					if e, err := d.Lookup("l" + name); err == nil {
						e.Inode().Readlink()
						e.Name()
						e.Parent()
					}
					d.Unlink("l"+name, c)
				}
				fs.Usage()
				var sf unix.Statfs_t
				fs.Statfs(&sf)
			}
		}()
	}
	wg.Wait()
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
}
