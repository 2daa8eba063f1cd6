package vfs

import "sync/atomic"

// VirtualFilesystem is the sentry's mount table: which guest paths its file
// systems serve. Everything else is the host's.
type VirtualFilesystem struct {
	mounts []*Mount
	// host is where the mounts sit on the host, and what the walk
	// learned of the host's own mounts.
	host *hostConfig
	// guest are the mounts the guest made inside the sentry's (mount(2)).
	guest guestTable
	// hostDirs counts the HostDirs open (OpenHostDir).
	hostDirs atomic.Int64
}

// New returns a VirtualFilesystem with mounts, finding where each mount
// point is on the host.
func New(mounts []*Mount) *VirtualFilesystem {
	return &VirtualFilesystem{mounts: mounts, host: newHostConfig(mounts)}
}

// Mounts returns the sandbox's own mounts (--tmpfs).
func (v *VirtualFilesystem) Mounts() []*Mount { return v.mounts }
