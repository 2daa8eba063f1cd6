package vfs_test

import (
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/sentry/vfs"
)

// TestFileDescriptionFlagsRace: the access checks (Readable, Writable,
// IsPath) run on one thread while F_SETFL (SetFlags) runs on another, as
// serving threads and the tracer do on unotify; the race detector finds
// any unsynchronized access, and the access mode never changes.
func TestFileDescriptionFlagsRace(t *testing.T) {
	fs, err := tmpfs.New(tmpfs.Options{RootMode: 01777})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Release()
	d, err := fs.Root().Create("f", 0o644, &vfs.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	f := vfs.NewFileDescription(nil, d, unix.O_RDONLY)
	defer f.DecRef()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for k := range 10000 {
			f.SetFlags(uint32(k%2) * (unix.O_APPEND | unix.O_NONBLOCK | unix.O_WRONLY))
		}
	}()
	go func() {
		defer wg.Done()
		for range 10000 {
			if !f.Readable() || f.Writable() || f.IsPath() {
				t.Error("the access mode changed")
				return
			}
		}
	}()
	wg.Wait()
	if got := f.Flags() & unix.O_ACCMODE; got != unix.O_RDONLY {
		t.Errorf("access mode %#o after F_SETFL, want O_RDONLY", got)
	}
}
