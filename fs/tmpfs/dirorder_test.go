package tmpfs

import (
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"testing"

	"sentry/sentry/vfs"
)

// fillDir makes n short symlinks (no store file each) named prefix0..
// prefix<n-1> in d, in that order, and returns their names.
func fillDir(t testing.TB, d vfs.Dentry, prefix string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for k := range names {
		names[k] = prefix + strconv.Itoa(k)
		if _, err := d.Symlink(names[k], "t", rootCreds); err != nil {
			t.Fatalf("symlink %s: %v", names[k], err)
		}
	}
	return names
}

// TestUnlinkOrderNotQuadratic removes the entries of a large directory in
// several orders and counts the slots each removal walks, from how the
// listing changed: a removal used to move every later entry of the
// listing (copy in removeEntryLocked), so unlinking 100,000 entries
// oldest first moved 5e9. The slots walked must stay within a small
// multiple of the entries, and the listing within
// twice its entries (plus minTombstones) after every removal; a listing
// halfway must return exactly the remaining entries.
func TestUnlinkOrderNotQuadratic(t *testing.T) {
	const n = 100000
	for _, tc := range []struct {
		name  string
		order func([]string) []string
	}{
		{"creation", func(s []string) []string { return s }},
		{"reverse", func(s []string) []string {
			r := make([]string, 0, len(s))
			for k := len(s) - 1; k >= 0; k-- {
				r = append(r, s[k])
			}
			return r
		}},
		{"odd then even", func(s []string) []string {
			r := make([]string, 0, len(s))
			for start := 1; start >= 0; start-- {
				for k := start; k < len(s); k += 2 {
					r = append(r, s[k])
				}
			}
			return r
		}},
		{"middle out", func(s []string) []string {
			r := make([]string, 0, len(s))
			for k := 0; k < len(s)/2; k++ {
				r = append(r, s[len(s)/2+k], s[len(s)/2-1-k])
			}
			return r
		}},
		{"random", func(s []string) []string {
			r := append([]string(nil), s...)
			rand.New(rand.NewSource(1)).Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newTestFS(t, Options{})
			d := mustMkdir(t, fs, "d", 0755, rootCreds)
			dd := d.(*dentry).inode.dir
			order := tc.order(fillDir(t, d, "f", n))
			walked := 0
			for k, name := range order {
				victim := mustWalk(t, fs, "d/"+name).(*dentry)
				before, capBefore := len(dd.order), cap(dd.order)
				wasLast := dd.order[before-1].d == victim
				if err := d.Unlink(name, rootCreds); err != nil {
					t.Fatalf("unlink %s: %v", name, err)
				}
				live := len(dd.entries)
				switch after := len(dd.order); {
				case after == before:
					walked++ // a tombstone
				case wasLast && cap(dd.order) == capBefore:
					walked += before - after // the trailing tombstones
				case after == live || cap(dd.order) != capBefore:
					walked += before // a compaction or a reallocation
				default:
					t.Fatalf("removal %d: %d slots became %d for %d entries", k, before, after, live)
				}
				if got, limit := len(dd.order), 2*live+minTombstones+1; got > limit {
					t.Fatalf("after %d removals: %d slots for %d entries, want at most %d", k+1, got, live, limit)
				}
				if k == n/2 {
					if got, want := len(listDir(t, d)), 2+live; got != want {
						t.Fatalf("halfway: listed %d names, want %d", got, want)
					}
				}
			}
			if walked > 4*n {
				t.Errorf("compaction walked %d slots for %d removals, want at most %d", walked, n, 4*n)
			}
			if len(dd.order) != 0 || cap(dd.order) > 64 {
				t.Errorf("emptied directory keeps %d slots (capacity %d)", len(dd.order), cap(dd.order))
			}
		})
	}
}

// listChunked lists d as getdents with a small buffer does: count entries
// per IterDirents call, each resuming at the offset the previous one
// returned last, and calls between after each call. It returns how many
// times each name was listed.
func listChunked(t *testing.T, d vfs.Dentry, count int, between func()) map[string]int {
	t.Helper()
	seen := make(map[string]int)
	off := int64(0)
	for {
		got := 0
		err := d.IterDirents(off, func(ino uint64, next int64, typ uint8, name string) bool {
			seen[name]++
			off = next
			got++
			return got < count
		})
		if err != nil {
			t.Fatalf("IterDirents(%d): %v", off, err)
		}
		if got == 0 {
			return seen
		}
		between()
	}
}

// checkListing requires every stable name exactly once and any other name
// at most once: what Linux's offset map (simple_offset, 6.6 on) gives a
// listing while other entries are made, removed and renamed (a rename
// gets a new offset, behind a newest-first cursor).
func checkListing(t *testing.T, seen map[string]int, stable []string) {
	t.Helper()
	for _, name := range stable {
		if seen[name] != 1 {
			t.Errorf("stable entry %s listed %d times, want once", name, seen[name])
		}
	}
	for name, c := range seen {
		if c != 1 {
			t.Errorf("entry %s listed %d times", name, c)
		}
	}
}

// churner makes, removes and renames entries of d whose names start with
// "c", so that tombstones pile up and compaction runs.
type churner struct {
	t    testing.TB
	d    vfs.Dentry
	live []string
	next int
	rng  *rand.Rand
}

func (c *churner) step() {
	switch op := c.rng.Intn(4); {
	case op == 0 || len(c.live) == 0:
		name := "c" + strconv.Itoa(c.next)
		c.next++
		if _, err := c.d.Symlink(name, "t", rootCreds); err != nil {
			c.t.Errorf("symlink %s: %v", name, err)
			return
		}
		c.live = append(c.live, name)
	case op == 1:
		k := c.rng.Intn(len(c.live))
		name := "c" + strconv.Itoa(c.next)
		c.next++
		if err := c.d.Rename(c.live[k], c.d, name, 0, rootCreds); err != nil {
			c.t.Errorf("rename %s: %v", c.live[k], err)
			return
		}
		c.live[k] = name
	default:
		// Oldest first, mostly: the removals that made order quadratic.
		k := 0
		if op == 3 {
			k = c.rng.Intn(len(c.live))
		}
		if err := c.d.Unlink(c.live[k], rootCreds); err != nil {
			c.t.Errorf("unlink %s: %v", c.live[k], err)
			return
		}
		c.live = append(c.live[:k], c.live[k+1:]...)
	}
}

// TestListingUnderChurn lists a directory in small chunks while entries
// are made, removed (oldest first, so tombstones build up and compaction
// moves the entries in order) and renamed between the chunks: each entry
// that exists throughout is listed exactly once, and none twice.
func TestListingUnderChurn(t *testing.T) {
	for _, tc := range []struct {
		stable, churn int // entries made first, interleaved
		count         int // entries per IterDirents call
		steps         int // churn steps between calls
	}{
		{10, 10, 1, 1},
		{100, 1000, 3, 20},
		{1000, 1000, 7, 100},
		{1000, 5000, 32, 500},
		{5000, 200, 100, 3},
	} {
		t.Run(fmt.Sprintf("%d_%d_%d_%d", tc.stable, tc.churn, tc.count, tc.steps), func(t *testing.T) {
			fs := newTestFS(t, Options{})
			d := mustMkdir(t, fs, "d", 0755, rootCreds)
			c := &churner{t: t, d: d, rng: rand.New(rand.NewSource(int64(tc.stable)))}
			var stable []string
			for k := 0; k < max(tc.stable, tc.churn); k++ {
				if k < tc.stable {
					name := "s" + strconv.Itoa(k)
					if _, err := d.Symlink(name, "t", rootCreds); err != nil {
						t.Fatal(err)
					}
					stable = append(stable, name)
				}
				if k < tc.churn {
					name := "c" + strconv.Itoa(c.next)
					c.next++
					if _, err := d.Symlink(name, "t", rootCreds); err != nil {
						t.Fatal(err)
					}
					c.live = append(c.live, name)
				}
			}
			seen := listChunked(t, d, tc.count, func() {
				for range tc.steps {
					c.step()
				}
			})
			checkListing(t, seen, append(stable, ".", ".."))
			if err := fs.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestListingUnderConcurrentChurn is TestListingUnderChurn with the churn
// in other goroutines, racing the listings (run it with -race).
func TestListingUnderConcurrentChurn(t *testing.T) {
	fs := newTestFS(t, Options{})
	d := mustMkdir(t, fs, "d", 0755, rootCreds)
	stable := append(fillDir(t, d, "s", 2000), ".", "..")
	const churners = 2
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range churners {
		mustMkdir(t, fs, "d/sub"+strconv.Itoa(g), 0755, rootCreds)
		c := &churner{t: t, d: d, rng: rand.New(rand.NewSource(int64(g)))}
		c.next = g << 32 // disjoint names per goroutine
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 50 {
					c.step()
				}
			}
		}()
	}
	for k := range 30 {
		seen := listChunked(t, d, 1+k%40, func() {})
		checkListing(t, seen, append(stable, "sub0", "sub1"))
	}
	close(stop)
	wg.Wait()
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkUnlinkInOrder reports the cost of an unlink when a directory
// of n entries is emptied oldest first (quadratic in all before
// tombstones: 2.0 us per unlink at 10,000 entries, 18.7 us at 100,000).
func BenchmarkUnlinkInOrder(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			fs := newTestFS(b, Options{})
			d := mustMkdir(b, fs, "d", 0755, rootCreds)
			names := make([]string, n)
			for k := range names {
				names[k] = "f" + strconv.Itoa(k)
			}
			b.ResetTimer()
			for done := 0; done < b.N; {
				b.StopTimer()
				for _, name := range names {
					if _, err := d.Symlink(name, "t", rootCreds); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				for _, name := range names[:min(n, b.N-done)] {
					if err := d.Unlink(name, rootCreds); err != nil {
						b.Fatal(err)
					}
					done++
				}
				b.StopTimer()
				for _, name := range names {
					d.Unlink(name, rootCreds) // what the round left
				}
				b.StartTimer()
			}
		})
	}
}
