package tmpfs

import (
	"testing"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// fuzzNames is the small namespace the fuzzer works in, so that operations
// collide often.
var fuzzNames = [...]string{"a", "b", "c", "a/a", "a/b", "b/a", "a/a/a", "c/b"}

var fuzzCreds = [...]*vfs.Credentials{rootCreds, userCreds, otherCreds, strangerCreds}

var fuzzFlags = [...]uint32{0, 0, unix.RENAME_NOREPLACE, unix.RENAME_EXCHANGE, unix.RENAME_WHITEOUT | unix.RENAME_EXCHANGE}

// FuzzOps applies a random sequence of operations, decoded three bytes at a
// time, and requires every error to be an Errno and Check to pass after
// every operation and once every open reference is dropped.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 0, 5, 0, 3, 7, 0, 1})
	f.Add([]byte{1, 0, 0, 0, 3, 0, 4, 3, 1, 9, 3, 0, 6, 3, 2, 3, 4, 3})
	f.Add([]byte{1, 0, 0, 1, 1, 0, 6, 0x10, 1, 6, 0x31, 3, 2, 1, 1, 8, 0, 2})
	f.Fuzz(fuzzOps)
}

func fuzzOps(t *testing.T, data []byte) {
	{
		fs, ferr := New(Options{RootMode: 01777, SizeLimit: 8 * 4096, MaxInodes: 12})
		if ferr != nil {
			t.Fatal(ferr)
		}
		defer fs.Release()
		held := map[vfs.Inode]int{}
		for len(data) >= 3 {
			op, x, y := data[0], data[1], data[2]
			data = data[3:]
			p := fuzzNames[int(x)%len(fuzzNames)]
			q := fuzzNames[int(x>>4)%len(fuzzNames)]
			c := fuzzCreds[int(y)%len(fuzzCreds)]
			var err error
			switch op % 14 {
			case 0, 1, 2, 3:
				d, name, werr := walkParent(fs, p)
				if werr != nil {
					continue
				}
				switch op % 14 {
				case 0:
					_, err = d.Create(name, uint32(y)<<4|uint32(y)&7, c)
				case 1:
					_, err = d.Mkdir(name, uint32(y)<<3|07, c)
				case 2:
					target := "t"
					if y&1 != 0 {
						target = string(make([]byte, 200))
					}
					_, err = d.Symlink(name, target, c)
				case 3:
					if y&4 != 0 {
						err = d.Rmdir(name, c)
					} else {
						err = d.Unlink(name, c)
					}
				}
			case 4:
				target, werr := walk(fs, q)
				d, name, perr := walkParent(fs, p)
				if werr != nil || perr != nil {
					continue
				}
				_, err = d.Link(name, target, c)
			case 5:
				od, on, e1 := walkParent(fs, p)
				nd, nn, e2 := walkParent(fs, q)
				if e1 != nil || e2 != nil {
					continue
				}
				err = od.Rename(on, nd, nn, fuzzFlags[int(y>>2)%len(fuzzFlags)], c)
			case 6, 7, 8:
				d, werr := walk(fs, p)
				if werr != nil {
					continue
				}
				i := d.Inode()
				switch op % 14 {
				case 6:
					_, err = i.WriteAt(make([]byte, int(y)*97), int64(x)*1531, c)
				case 7:
					err = i.Truncate(int64(y)*211, c)
				case 8:
					_, err = i.ReadAt(make([]byte, int(y)), int64(x)*100)
				}
			case 9:
				if d, werr := walk(fs, p); werr == nil {
					d.Inode().IncRef()
					held[d.Inode()]++
					// A guest's descriptor: the placeholder, through
					// which it writes and maps the data behind the
					// sentry's back.
					if y&16 != 0 {
						err = guestIO(d.Inode(), y)
					}
				}
			case 10:
				for i := range held {
					i.DecRef()
					if held[i]--; held[i] == 0 {
						delete(held, i)
					}
					break
				}
			case 11:
				if d, werr := walk(fs, p); werr == nil {
					err = d.IterDirents(int64(y%4), func(uint64, int64, uint8, string) bool { return y&8 == 0 })
				}
			case 12:
				for i := range held {
					_, _, err = i.Append(make([]byte, int(y)*41), c)
					break
				}
			case 13:
				if d, werr := walk(fs, p); werr == nil {
					d.Inode().Readlink()
					err = d.Inode().CheckPermission(c, uint32(y)&7)
				}
			}
			errnoOf(t, err)
			if cerr := fs.Check(); cerr != nil {
				t.Fatalf("after op %d(%q, %q): %v", op%14, p, q, cerr)
			}
		}
		for i, n := range held {
			for range n {
				i.DecRef()
			}
		}
		if err := fs.Check(); err != nil {
			t.Fatalf("after closing all: %v", err)
		}
		// Everything can be removed again, leaving only the root.
		removeAll(t, fs, fs.Root())
		if n, b := fs.Usage(); n != 1 || b != 0 {
			t.Fatalf("after removing all: usage %d inodes, %d bytes", n, b)
		}
	}
}

// guestIO opens ino's placeholder as a guest's open would and writes and
// maps through it, as the guest does on the host.
func guestIO(ino vfs.Inode, y byte) error {
	fd, err := ino.OpenHost(unix.O_RDWR)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if ino.Mode()&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	off := int(y) * 97
	n, err := unix.Pwrite(fd, make([]byte, int(y)*31), int64(off))
	if err != nil {
		return err
	}
	if y&32 != 0 && n > 0 {
		// Only a byte the write allocated: a hole past the size limit
		// would be SIGBUS, as on Linux.
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Size > int64(off) {
			m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err == nil {
				m[off]++
				unix.Munmap(m)
			}
		}
	}
	return nil
}

func removeAll(t *testing.T, fs *Filesystem, d vfs.Dentry) {
	var names []string
	d.IterDirents(2, func(ino uint64, next int64, typ uint8, name string) bool {
		names = append(names, name)
		return true
	})
	for _, n := range names {
		e, err := d.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if e.Inode().(*inode).isDir() {
			removeAll(t, fs, e)
			err = d.Rmdir(n, rootCreds)
		} else {
			err = d.Unlink(n, rootCreds)
		}
		if err != nil {
			t.Fatalf("removing %q: %v", n, err)
		}
	}
}
