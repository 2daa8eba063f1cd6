package sentry

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/sentry/vfs"
)

// fdEnv is a tmpfs mount with files to open.
type fdEnv struct {
	t     *testing.T
	mount *vfs.Mount
	root  *vfs.Credentials
}

func newFDEnv(t *testing.T) *fdEnv {
	spec := tmpfs.MountSpec{Point: "/t", Options: tmpfs.MountOptions{Mode: tmpfs.DefaultRootMode}}
	ms, err := tmpfs.NewMounts([]tmpfs.MountSpec{spec}, tmpfs.Host{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms[0].FS.Release)
	return &fdEnv{t: t, mount: ms[0], root: &vfs.Credentials{}}
}

// open makes the file name and returns a description of it with the
// opener's one reference, as openat does before installing it.
func (e *fdEnv) open(name string) *vfs.FileDescription {
	e.t.Helper()
	d, err := e.mount.Root.Create(name, 0644, e.root)
	if err != nil {
		e.t.Fatalf("create %s: %v", name, err)
	}
	return vfs.NewFileDescription(e.mount, d, unix.O_RDWR)
}

// inodes is the mount's live inode count (the root included).
func (e *fdEnv) inodes() int64 {
	n, _ := e.mount.FS.Usage()
	return n
}

// fds lists a table's numbers in order, with a "e" suffix for CLOEXEC.
func fds(t *FDTable) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for fd, e := range t.entries {
		s := strconv.Itoa(int(fd))
		if e.cloexec {
			s += "e"
		}
		out = append(out, s)
	}
	slices.SortFunc(out, compareFD)
	return out
}

// compareFD orders fds' strings by number.
func compareFD(a, b string) int {
	x, _ := strconv.Atoi(strings.TrimSuffix(a, "e"))
	y, _ := strconv.Atoi(strings.TrimSuffix(b, "e"))
	return x - y
}

func TestFDTableInstallGetRemove(t *testing.T) {
	e := newFDEnv(t)
	tab := newFDTable()
	f := e.open("a")
	if old := tab.Install(3, f, false); old != nil {
		t.Fatalf("Install on a free number returned %p", old)
	}
	// The opener's reference and the table's.
	if f.Refs() != 2 || !tab.Has(3) || tab.Has(4) || tab.Len() != 1 {
		t.Fatalf("after Install: refs %d, Has(3) %v, Has(4) %v, Len %d", f.Refs(), tab.Has(3), tab.Has(4), tab.Len())
	}
	f.DecRef() // the opener is done with it

	got := tab.Get(3)
	if got != f || f.Refs() != 2 {
		t.Fatalf("Get(3) = %p (refs %d), want %p with a new reference", got, f.Refs(), f)
	}
	got.DecRef()
	if tab.Get(4) != nil || f.Refs() != 1 {
		t.Fatalf("Get(4) of a number not in the table: refs %d", f.Refs())
	}

	// dup2 over a number: the old description comes back with the
	// table's reference, for the caller to release.
	g := e.open("b")
	if old := tab.Install(3, g, true); old != f {
		t.Fatalf("Install over 3 returned %p, want %p", old, f)
	}
	if f.Refs() != 1 || g.Refs() != 2 {
		t.Fatalf("refs after replacing: old %d, new %d", f.Refs(), g.Refs())
	}
	if ce, ok := tab.CloseOnExec(3); !ce || !ok {
		t.Errorf("CloseOnExec(3) = %v, %v after Install with cloexec", ce, ok)
	}
	f.DecRef()
	g.DecRef()

	if r := tab.Remove(3); r != g || g.Refs() != 1 || tab.Has(3) || tab.Len() != 0 {
		t.Fatalf("Remove(3) = %p, refs %d, Has %v, Len %d", r, g.Refs(), tab.Has(3), tab.Len())
	}
	if r := tab.Remove(3); r != nil {
		t.Fatalf("second Remove(3) = %p", r)
	}
	if _, ok := tab.CloseOnExec(3); ok {
		t.Error("CloseOnExec of a removed number reports it exists")
	}
	// Setting the flag of a number not in the table makes no entry.
	tab.SetCloseOnExec(3, true)
	if tab.Has(3) {
		t.Error("SetCloseOnExec made an entry")
	}
	g.DecRef()
}

func TestFDTableInstallWith(t *testing.T) {
	errFull := errors.New("EMFILE")
	tests := []struct {
		name    string
		preset  int32 // a number already in the table, or -1
		alloc   int32
		err     error
		wantOld bool
	}{
		{"free number", -1, 5, nil, false},
		// A number the table still holds: the kernel closed it behind
		// the sentry's back and gave it out again.
		{"number in use", 5, 5, nil, true},
		{"alloc fails", -1, 5, errFull, false},
		{"alloc fails, number in use", 5, 5, errFull, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newFDEnv(t)
			tab := newFDTable()
			var preset *vfs.FileDescription
			if tc.preset >= 0 {
				preset = e.open("p")
				tab.Install(tc.preset, preset, false)
				preset.DecRef()
			}
			f := e.open("f")
			locked := false
			fd, old, err := tab.InstallWith(func() (int32, error) {
				// The number reaches the guest under the lock.
				locked = !tab.mu.TryLock()
				if !locked {
					tab.mu.Unlock()
				}
				return tc.alloc, tc.err
			}, f, true)
			if !locked {
				t.Error("alloc ran without the table locked")
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) || fd != -1 || old != nil {
					t.Fatalf("InstallWith = %d, %p, %v; want -1, nil, %v", fd, old, err, tc.err)
				}
				// No reference taken, nothing installed or displaced.
				if f.Refs() != 1 || (tc.preset >= 0) != tab.Has(tc.alloc) || tab.Len() > 1 {
					t.Fatalf("after a failed alloc: refs %d, table %v", f.Refs(), fds(tab))
				}
				if tc.preset >= 0 && tab.Get(tc.preset) != preset {
					t.Fatal("a failed alloc displaced the entry")
				}
			} else {
				if err != nil || fd != tc.alloc || (old != nil) != tc.wantOld || (tc.wantOld && old != preset) {
					t.Fatalf("InstallWith = %d, %p, %v; want %d, old %v", fd, old, err, tc.alloc, tc.wantOld)
				}
				if f.Refs() != 2 {
					t.Fatalf("refs %d, want 2 (the opener's and the table's)", f.Refs())
				}
				if ce, ok := tab.CloseOnExec(fd); !ce || !ok {
					t.Errorf("CloseOnExec(%d) = %v, %v", fd, ce, ok)
				}
			}
			// The lock is free again.
			if !tab.mu.TryLock() {
				t.Fatal("InstallWith left the table locked")
			}
			tab.mu.Unlock()
		})
	}
}

// TestFDTableRemoveIf: exec's CLOEXEC sweep and close_range, by predicate.
func TestFDTableRemoveIf(t *testing.T) {
	tests := []struct {
		name       string
		pred       func(fd int32, cloexec bool) bool
		removed    []string
		kept       []string
		markFirst  func(fd int32) bool // SetCloseOnExecIf before, if set
		wantMarked []string
	}{
		{
			name:    "exec sweeps CLOEXEC",
			pred:    func(_ int32, cloexec bool) bool { return cloexec },
			removed: []string{"4e", "6e"},
			kept:    []string{"3", "5", "7"},
		},
		{
			name:    "close_range 4-6",
			pred:    func(fd int32, _ bool) bool { return fd >= 4 && fd <= 6 },
			removed: []string{"4e", "5", "6e"},
			kept:    []string{"3", "7"},
		},
		{
			name:    "nothing",
			pred:    func(int32, bool) bool { return false },
			removed: nil,
			kept:    []string{"3", "4e", "5", "6e", "7"},
		},
		{
			// close_range(5, ~0, CLOSE_RANGE_CLOEXEC), then exec.
			name:       "close_range CLOEXEC then exec",
			markFirst:  func(fd int32) bool { return fd >= 5 },
			wantMarked: []string{"3", "4e", "5e", "6e", "7e"},
			pred:       func(_ int32, cloexec bool) bool { return cloexec },
			removed:    []string{"4e", "5e", "6e", "7e"},
			kept:       []string{"3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newFDEnv(t)
			tab := newFDTable()
			files := map[int32]*vfs.FileDescription{}
			for fd := int32(3); fd <= 7; fd++ {
				f := e.open("f" + strconv.Itoa(int(fd)))
				tab.Install(fd, f, fd%2 == 0)
				f.DecRef()
				files[fd] = f
			}
			if tc.markFirst != nil {
				tab.SetCloseOnExecIf(tc.markFirst)
				if got := fds(tab); !slices.Equal(got, tc.wantMarked) {
					t.Fatalf("after SetCloseOnExecIf: %v, want %v", got, tc.wantMarked)
				}
			}
			// What the predicate is asked about is each entry's flag.
			removed := tab.RemoveIf(tc.pred)
			var got []string
			for _, f := range removed {
				for fd, g := range files {
					if g == f {
						got = append(got, strconv.Itoa(int(fd)))
					}
				}
			}
			slices.SortFunc(got, compareFD)
			want := make([]string, len(tc.removed))
			for i, r := range tc.removed {
				want[i] = strings.TrimSuffix(r, "e")
			}
			if !slices.Equal(got, want) {
				t.Errorf("removed %v, want %v", got, want)
			}
			if kept := fds(tab); !slices.Equal(kept, tc.kept) {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
			// The caller owns the removed entries' references.
			for _, f := range removed {
				if f.Refs() != 1 {
					t.Errorf("a removed description has %d references, want the table's 1", f.Refs())
				}
				f.DecRef()
			}
		})
	}
}

// TestFDTableFork: a child made without CLONE_FILES gets a copy (dup_fd):
// the same descriptions, each with one more reference, the same flags,
// and later changes on either side stay there.
func TestFDTableFork(t *testing.T) {
	e := newFDEnv(t)
	parent := newFDTable()
	a, b := e.open("a"), e.open("b")
	parent.Install(3, a, false)
	parent.Install(4, b, true)
	a.DecRef()
	b.DecRef()

	child := parent.Fork()
	if got := fds(child); !slices.Equal(got, []string{"3", "4e"}) {
		t.Fatalf("child table %v", got)
	}
	if a.Refs() != 2 || b.Refs() != 2 {
		t.Fatalf("refs after Fork: %d, %d; want 2 each", a.Refs(), b.Refs())
	}
	if child.Shared() || parent.Shared() {
		t.Error("a forked table is not shared")
	}
	if g := child.Get(3); g != a {
		t.Errorf("child's 3 is %p, want the parent's description %p", g, a)
	} else {
		g.DecRef()
	}

	// exec in the child sweeps its CLOEXEC entries, not the parent's.
	for _, f := range child.RemoveIf(func(_ int32, cloexec bool) bool { return cloexec }) {
		f.DecRef()
	}
	child.SetCloseOnExec(3, true)
	if got := fds(parent); !slices.Equal(got, []string{"3", "4e"}) {
		t.Errorf("parent table after the child's exec %v", got)
	}
	if got := fds(child); !slices.Equal(got, []string{"3e"}) {
		t.Errorf("child table after its exec %v", got)
	}
	if b.Refs() != 1 {
		t.Errorf("b refs %d, want the parent's 1", b.Refs())
	}

	// The child exits: its references go, the parent's stay.
	child.DecUsers()
	if a.Refs() != 1 || child.Len() != 0 || parent.Len() != 2 {
		t.Errorf("after the child's exit: a refs %d, child %v, parent %v", a.Refs(), fds(child), fds(parent))
	}
}

// TestFDTableUsers: a table shared by CLONE_FILES lives until its last
// user goes, which closes every entry (put_files_struct); the unlinked
// file it held open is freed then. (Record locks are the host's: a
// placeholder is the file's own open description.)
func TestFDTableUsers(t *testing.T) {
	tests := []struct {
		name   string
		users  int // tasks sharing the table
		leaves int // how many DecUsers
		closed bool
	}{
		{"one user leaves", 1, 1, true},
		{"one of two leaves", 2, 1, false},
		{"both leave", 2, 2, true},
		{"two of three leave", 3, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newFDEnv(t)
			tab := newFDTable()
			for range tc.users - 1 {
				tab.IncUsers()
			}
			if tab.Shared() != (tc.users > 1) {
				t.Fatalf("Shared() = %v with %d users", tab.Shared(), tc.users)
			}
			f := e.open("u")
			tab.Install(3, f, false)
			tab.Install(4, f, true) // a dup: one description, two entries
			f.DecRef()
			if err := e.mount.Root.Unlink("u", e.root); err != nil {
				t.Fatal(err)
			}
			before := e.inodes()
			for range tc.leaves {
				tab.DecUsers()
			}
			if tc.closed {
				if tab.Len() != 0 {
					t.Errorf("entries left after the last user: %v", fds(tab))
				}
				if e.inodes() != before-1 {
					t.Errorf("the unlinked file was not freed: inodes %d -> %d", before, e.inodes())
				}
			} else {
				if got := fds(tab); !slices.Equal(got, []string{"3", "4e"}) || f.Refs() != 2 {
					t.Errorf("a user left the table %v (refs %d); want it intact", got, f.Refs())
				}
				if e.inodes() != before {
					t.Errorf("inodes %d -> %d; want unchanged", before, e.inodes())
				}
			}
		})
	}
}
