package tmpfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Check verifies the file system's invariants and returns a description of
// the first violation found, or nil:
//
//   - the tree: every entry's dentry records its directory, name and a
//     position below the directory's next one, positions (of entries and
//     tombstones) are strictly increasing in listing order, the name map
//     and the listing agree, tombstones are no more than the entries or
//     minTombstones and none is last, no directory is reachable twice,
//     and only live inodes are reachable;
//   - link counts: a non-directory has one link per name, a directory 2 +
//     its subdirectories, a removed directory 0 and no entries;
//   - sizes: a directory's is 40 + 20 per entry, a symlink's its target
//     length; a regular file has its backing, with its permission bits;
//   - accounting: the live-inode count, the inode slots (inodes plus extra
//     links) and the pages the sentry holds itself (long symlinks) equal
//     the sums over the live inodes, and stay within the limits;
//   - leaks: every live inode is reachable, or unlinked and still open; an
//     unlinked inode without open references must have been freed.
//
// Check must be called
// while no operation is in flight (as tests and fuzzing do).
func (fs *Filesystem) Check() error {
	fs.mu.RLock()
	defer fs.mu.RUnlock()

	if fs.root == nil || fs.root.parent != nil || fs.root.name != "/" || !fs.root.inode.isDir() {
		return fmt.Errorf("root dentry is malformed")
	}
	names := make(map[*inode]int64)  // names seen per non-directory
	dirs := make(map[*inode]*dentry) // directories seen, with their dentry
	stack := []*dentry{fs.root}
	dirs[fs.root.inode] = fs.root
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if err := checkDir(d, dirs, names, &stack); err != nil {
			return err
		}
	}
	for i, n := range names {
		if got := int64(i.nlink.Load()); got != n {
			return fmt.Errorf("inode %d: nlink %d, but %d names", i.ino, got, n)
		}
	}

	var inodes, slots, pages, xspace int64
	seen := make(map[uint64]bool)
	for i := fs.live; i != nil; i = i.nextLive {
		if i.nextLive != nil && i.nextLive.prevLive != i {
			return fmt.Errorf("live list broken after inode %d", i.ino)
		}
		if i.freed {
			return fmt.Errorf("inode %d is on the live list but freed", i.ino)
		}
		if seen[i.ino] {
			return fmt.Errorf("inode number %d used twice", i.ino)
		}
		seen[i.ino] = true
		if i.ino == 0 || i.ino >= fs.nextIno {
			return fmt.Errorf("inode %d: number out of range (next %d)", i.ino, fs.nextIno)
		}
		_, reachable := names[i]
		if _, ok := dirs[i]; ok {
			reachable = true
		}
		nlink, refs := i.nlink.Load(), i.refs.Load()
		switch {
		case refs < 0:
			return fmt.Errorf("inode %d: %d references", i.ino, refs)
		case !reachable && nlink != 0:
			return fmt.Errorf("inode %d: nlink %d but not reachable from the root", i.ino, nlink)
		case !reachable && refs == 0:
			return fmt.Errorf("inode %d: leaked: no links and no references but not freed", i.ino)
		case !reachable && i.isDir() && len(i.dir.entries) != 0:
			return fmt.Errorf("removed directory %d still has %d entries", i.ino, len(i.dir.entries))
		}
		inodes++
		slots++
		i.mu.Lock()
		for name, v := range i.xattrs {
			xspace += xattrSpace(name, v)
		}
		i.mu.Unlock()
		if !i.isDir() && nlink > 1 {
			slots += int64(nlink) - 1
		}
		p, err := checkData(i)
		if err != nil {
			return err
		}
		pages += p
	}
	for i := range names {
		if i.freed {
			return fmt.Errorf("inode %d is reachable but freed", i.ino)
		}
	}
	for i := range dirs {
		if i.freed {
			return fmt.Errorf("directory %d is reachable but freed", i.ino)
		}
	}
	if inodes != fs.inodes {
		return fmt.Errorf("inode count %d, but %d live inodes", fs.inodes, inodes)
	}
	if slots != fs.islots {
		return fmt.Errorf("inode slots %d, but live inodes and extra links make %d", fs.islots, slots)
	}
	if xspace != fs.xattrSpace {
		return fmt.Errorf("xattr space %d, but live inodes' attributes take %d", fs.xattrSpace, xspace)
	}
	if fs.maxInodes > 0 && fs.ispaceUsedLocked() > fs.maxInodes*bogoInodeSize {
		return fmt.Errorf("inode space %d exceeds nr_inodes %d", fs.ispaceUsedLocked(), fs.maxInodes)
	}
	if used := fs.usedPages.Load(); used != pages {
		return fmt.Errorf("used pages %d, but live inodes hold %d", used, pages)
	}
	if maxPages := fs.maxPages.Load(); maxPages > 0 && pages > maxPages {
		return fmt.Errorf("used pages %d exceed the limit %d", pages, maxPages)
	}
	if fs.store.closed {
		return fmt.Errorf("store released")
	}
	return nil
}

// checkDir checks directory d's entries and link count, counts its
// non-directory names into names and pushes its subdirectories.
func checkDir(d *dentry, dirs map[*inode]*dentry, names map[*inode]int64, stack *[]*dentry) error {
	di := d.inode
	dd := di.dir
	if di.freed || di.nlink.Load() == 0 {
		return fmt.Errorf("directory %d (%q) is reachable but removed", di.ino, d.name)
	}
	subdirs := int64(0)
	live := 0
	last := int64(firstEntryPos - 1)
	for _, s := range dd.order {
		e := s.d
		switch {
		case s.pos <= last || s.pos >= dd.nextPos:
			return fmt.Errorf("directory %d: slot at bad position %d (previous %d, next %d)", di.ino, s.pos, last, dd.nextPos)
		case e == nil:
			last = s.pos
			continue // a tombstone
		case e.pos != s.pos:
			return fmt.Errorf("directory %d: entry %q at position %d in a slot at position %d", di.ino, e.name, e.pos, s.pos)
		case e.parent != d:
			return fmt.Errorf("directory %d: entry %q has another parent", di.ino, e.name)
		case dd.entries[e.name] != e:
			return fmt.Errorf("directory %d: listed entry %q is not the one named so", di.ino, e.name)
		case e.inode.freed:
			return fmt.Errorf("directory %d: entry %q names freed inode %d", di.ino, e.name, e.inode.ino)
		}
		live++
		last = s.pos
		if e.inode.isDir() {
			if prev, ok := dirs[e.inode]; ok {
				return fmt.Errorf("directory %d reachable as %q and %q", e.inode.ino, prev.name, e.name)
			}
			dirs[e.inode] = e
			subdirs++
			*stack = append(*stack, e)
		} else {
			names[e.inode]++
		}
	}
	if live != len(dd.entries) {
		return fmt.Errorf("directory %d: %d names but %d listed", di.ino, len(dd.entries), live)
	}
	if dead := len(dd.order) - live; dead > max(live, minTombstones) {
		return fmt.Errorf("directory %d: %d tombstones for %d entries", di.ino, dead, live)
	}
	if n := len(dd.order); n > 0 && dd.order[n-1].d == nil {
		return fmt.Errorf("directory %d: a tombstone is last", di.ino)
	}
	if got, want := int64(di.nlink.Load()), 2+subdirs; got != want {
		return fmt.Errorf("directory %d (%q): nlink %d, want %d", di.ino, d.name, got, want)
	}
	di.mu.Lock()
	size := di.size
	di.mu.Unlock()
	if want := int64(emptyDirSize + bogoDirentSize*len(dd.entries)); size != want {
		return fmt.Errorf("directory %d (%q): size %d, want %d", di.ino, d.name, size, want)
	}
	return nil
}

// checkData checks a live inode's data and returns the pages it holds.
func checkData(i *inode) (int64, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	switch {
	case i.isRegular():
		// The backing holds the data; it must exist while the inode
		// lives, as a regular file of the store with the inode's
		// permission bits.
		var st unix.Stat_t
		if err := i.fs.store.statFile(i.ino, &st); err != nil {
			return 0, fmt.Errorf("inode %d: backing: %v", i.ino, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0777 != i.mode&0777 {
			return 0, fmt.Errorf("inode %d: backing mode %o, inode mode %o", i.ino, st.Mode, i.mode)
		}
	case i.isSymlink():
		if i.size != int64(len(i.target)) {
			return 0, fmt.Errorf("symlink %d: size %d, target length %d", i.ino, i.size, len(i.target))
		}
		if i.symPage != (len(i.target)+1 > shortSymlinkLen) {
			return 0, fmt.Errorf("symlink %d: page use does not match target length %d", i.ino, len(i.target))
		}
		if i.symPage {
			return 1, nil
		}
	}
	return 0, nil
}
