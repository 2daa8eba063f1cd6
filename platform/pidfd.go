package platform

import "golang.org/x/sys/unix"

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd for one thread, which
// need not lead its thread group.
const pidfdThread = unix.O_EXCL

// GetFD returns a sentry descriptor for the file thread tid has at fd
// (pidfd_getfd): the same open file description, so the sentry can act on
// a guest's socket or pipe on its behalf. EBADF if fd is not open.
func GetFD(tid int32, fd int32) (int, error) {
	pidfd, err := unix.PidfdOpen(int(tid), pidfdThread)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pidfd)
	return unix.PidfdGetfd(pidfd, int(fd), 0)
}
