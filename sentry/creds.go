package sentry

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// The sentry never decides a task's credentials: the kernel applies its
// own rules (set*id, capset, exec of a set-id binary or one with file
// capabilities, securebits, user namespaces) and the sentry reads the
// outcome from /proc, as a task's own /proc/self/status would show it.

// readCreds reads the credentials of the thread whose /proc directory is
// dir (/proc/TID, or /proc/thread-self): fsuid, fsgid, groups, effective
// capabilities, and whether it is in another user namespace than the
// sentry's (then with that namespace's maps).
func readCreds(dir string) (*vfs.Credentials, error) {
	data, err := os.ReadFile(dir + "/status")
	if err != nil {
		return nil, err
	}
	c, err := parseStatusCreds(string(data))
	if err != nil {
		return nil, err
	}
	own, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		return nil, err
	}
	ns, err := os.Readlink(dir + "/ns/user")
	if err != nil {
		return nil, err
	}
	c.UserNS = ns
	if ns != own {
		// Capabilities held in a namespace of the guest's own count
		// only over the ids it maps (capable_wrt_inode_uidgid). A map
		// not written yet maps nothing: until the task's next refresh
		// (exec, set*id, capset) its capabilities count for nothing,
		// stricter than Linux, never looser.
		c.Foreign = true
		if c.UIDMap, err = readIDMap(dir + "/uid_map"); err != nil {
			return nil, err
		}
		if c.GIDMap, err = readIDMap(dir + "/gid_map"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// procStatus is what the sentry reads of a /proc/PID/status: the four
// uids and gids (real, effective, saved, filesystem), the groups, and the
// effective and permitted capabilities; which lines were there.
type procStatus struct {
	uid, gid       [4]uint32
	groups         []uint32
	capEff, capPrm vfs.CapSet
	ids            int // Uid and Gid lines
	hasEff, hasPrm bool
}

// parseStatus takes the Uid, Gid, Groups, CapEff and CapPrm lines of a
// /proc/PID/status.
func parseStatus(status string) (procStatus, error) {
	var p procStatus
	err := statusLines(status, func(key string, f []string) error {
		var err error
		switch key {
		case "Uid":
			p.uid, err = statusIDs(f)
			p.ids++
		case "Gid":
			p.gid, err = statusIDs(f)
			p.ids++
		case "Groups":
			for _, g := range f {
				n, err := strconv.ParseUint(g, 10, 32)
				if err != nil {
					return err
				}
				p.groups = append(p.groups, uint32(n))
			}
		case "CapEff":
			p.capEff, err = statusCaps(f)
			p.hasEff = true
		case "CapPrm":
			p.capPrm, err = statusCaps(f)
			p.hasPrm = true
		}
		return err
	})
	return p, err
}

// parseStatusCreds takes the Uid, Gid, Groups and CapEff lines of a
// /proc/PID/status.
func parseStatusCreds(status string) (*vfs.Credentials, error) {
	p, err := parseStatus(status)
	if err != nil {
		return nil, err
	}
	if p.ids != 2 || !p.hasEff {
		return nil, unix.EINVAL
	}
	return &vfs.Credentials{UID: p.uid[3], GID: p.gid[3], Groups: p.groups, Caps: p.capEff}, nil
}

// statusLines calls fn with the key and fields of each line of a
// /proc/PID/status, and stops at its first error.
func statusLines(status string, fn func(key string, f []string) error) error {
	for _, line := range strings.Split(status, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if err := fn(key, strings.Fields(val)); err != nil {
			return err
		}
	}
	return nil
}

// statusIDs are a Uid or Gid line's ids: real, effective, saved,
// filesystem.
func statusIDs(f []string) ([4]uint32, error) {
	var ids [4]uint32
	if len(f) != 4 {
		return ids, unix.EINVAL
	}
	for i := range ids {
		n, err := strconv.ParseUint(f[i], 10, 32)
		if err != nil {
			return ids, err
		}
		ids[i] = uint32(n)
	}
	return ids, nil
}

// statusCaps is a Cap* line's set.
func statusCaps(f []string) (vfs.CapSet, error) {
	if len(f) != 1 {
		return 0, unix.EINVAL
	}
	n, err := strconv.ParseUint(f[0], 16, 64)
	if err != nil {
		return 0, err
	}
	return vfs.CapSet(n), nil
}

// readIDMap reads a uid_map or gid_map: "inside outside count" lines,
// outside in the reader's namespace (the sentry's).
func readIDMap(path string) (vfs.IDMap, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m vfs.IDMap
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, unix.EINVAL
		}
		first, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil {
			return nil, err
		}
		count, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return nil, err
		}
		m = append(m, vfs.IDRange{First: uint32(first), Count: uint32(count)})
	}
	return m, nil
}

// HostCredentials are the sentry's own credentials (its calling thread's),
// which the first guest process starts with.
func HostCredentials() (vfs.Credentials, error) {
	c, err := readCreds("/proc/thread-self")
	if err != nil {
		return vfs.Credentials{}, err
	}
	return *c, nil
}
