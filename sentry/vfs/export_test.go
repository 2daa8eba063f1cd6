package vfs

// SetProtectedSymlinks forces fs.protected_symlinks on or off for v, for
// the tests (the test host may have it off).
func (v *VirtualFilesystem) SetProtectedSymlinks(on bool) { v.host.protectedSymlinks = on }
