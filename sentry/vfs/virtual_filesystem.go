package vfs

// VirtualFilesystem is the sentry's mount table: which guest paths its file
// systems serve. Everything else is the host's.
type VirtualFilesystem struct {
	mounts []*Mount
}

// New returns a VirtualFilesystem with mounts.
func New(mounts []*Mount) *VirtualFilesystem {
	return &VirtualFilesystem{mounts: mounts}
}

// Mounts returns the mounts.
func (v *VirtualFilesystem) Mounts() []*Mount { return v.mounts }
