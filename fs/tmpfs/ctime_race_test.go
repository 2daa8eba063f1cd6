package tmpfs

import (
	"sync"
	"testing"

	"sentry/sentry/vfs"
)

// TestChmodRacingLinksKeepsBackingMode: a chmod of a regular file racing
// a link and an unlink of it (each moves its ctime by a chmod of the
// backing to the mode the backing has) must leave the backing with the
// file's mode: the ctime's stat and chmod, outside the inode's lock,
// undid a chmod between them (a random guest left "backing mode 100700,
// inode mode 100260"). Check compares the two.
func TestChmodRacingLinksKeepsBackingMode(t *testing.T) {
	fs := newTestFS(t, Options{})
	f := mustCreate(t, fs, "f", 0o700, rootCreds)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		modes := []uint32{0o260, 0o700, 0o644, 0o711}
		for k := range 30000 {
			a := vfs.Attr{Mask: vfs.AttrMode, Mode: modes[k%len(modes)]}
			if err := f.Inode().(*inode).SetAttr(rootCreds, &a); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 30000 {
			if _, err := fs.Root().Link("g", f, rootCreds); err != nil {
				t.Error(err)
				return
			}
			if err := fs.Root().Unlink("g", rootCreds); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
}
