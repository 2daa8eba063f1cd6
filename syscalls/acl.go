package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// POSIX ACLs as setxattr carries them (system.posix_acl_access and
// system.posix_acl_default): struct posix_acl_xattr_header (version 2)
// and struct posix_acl_xattr_entry {tag, perm u16; id u32}, little-endian.
// The sentry keeps the ACLs a mode can say (an access ACL of the owner,
// group and other entries only, which Linux turns into the mode and does
// not store: posix_acl_update_mode); one with named users or groups, a
// mask, or a default ACL is not modelled (EOPNOTSUPP).

// The e_tag values (include/uapi/linux/posix_acl.h).
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

const (
	aclXattrVersion = 2
	aclHeaderSize   = 4
	aclEntrySize    = 8
	// aclUndefinedID is the id of an entry without one, and no valid
	// uid or gid (make_kuid of it is invalid).
	aclUndefinedID = 0xffffffff
)

// aclEntry is one entry of a POSIX ACL.
type aclEntry struct {
	tag, perm uint16
	id        uint32
}

// parseACL is posix_acl_from_xattr: EINVAL for a short value or one not
// made of whole entries, EOPNOTSUPP for another version, EINVAL for an
// unknown tag or an invalid id. No entries (a header alone) is nil: the
// ACL is removed.
func parseACL(v []byte) ([]aclEntry, error) {
	if len(v) < aclHeaderSize {
		return nil, unix.EINVAL
	}
	if binary.LittleEndian.Uint32(v) != aclXattrVersion {
		return nil, unix.EOPNOTSUPP
	}
	if (len(v)-aclHeaderSize)%aclEntrySize != 0 {
		return nil, unix.EINVAL
	}
	n := (len(v) - aclHeaderSize) / aclEntrySize
	if n == 0 {
		return nil, nil
	}
	acl := make([]aclEntry, n)
	for i := range acl {
		e := v[aclHeaderSize+i*aclEntrySize:]
		acl[i] = aclEntry{binary.LittleEndian.Uint16(e), binary.LittleEndian.Uint16(e[2:]), binary.LittleEndian.Uint32(e[4:])}
		switch acl[i].tag {
		case aclUserObj, aclGroupObj, aclMask, aclOther:
		case aclUser, aclGroup:
			if acl[i].id == aclUndefinedID {
				return nil, unix.EINVAL
			}
		default:
			return nil, unix.EINVAL
		}
	}
	return acl, nil
}

// validACL is posix_acl_valid: permissions of read, write and execute
// only; the owner's entry, the named users, the group's entry, the named
// groups, the mask (needed with named entries), and the others' entry,
// in that order, the object entries once each.
func validACL(acl []aclEntry) error {
	const done = 0
	state, needsMask := uint16(aclUserObj), false
	for _, e := range acl {
		if e.perm&^7 != 0 {
			return unix.EINVAL
		}
		// state is what may come next: the owner's entry, named users
		// (aclUser), named groups (aclGroup), the others' entry after
		// the mask (aclOther), or nothing (done).
		switch e.tag {
		case aclUserObj, aclGroupObj, aclMask:
			from, to := uint16(aclUserObj), uint16(aclUser)
			if e.tag == aclGroupObj {
				from, to = aclUser, aclGroup
			} else if e.tag == aclMask {
				from, to = aclGroup, aclOther
			}
			if state != from {
				return unix.EINVAL
			}
			state = to
		case aclUser, aclGroup:
			if state != e.tag {
				return unix.EINVAL
			}
			needsMask = true
		case aclOther:
			if state != aclOther && (state != aclGroup || needsMask) {
				return unix.EINVAL
			}
			state = done
		default:
			return unix.EINVAL
		}
	}
	if state != done {
		return unix.EINVAL
	}
	return nil
}

// aclModeBits is posix_acl_equiv_mode for a valid ACL: the permission
// bits it is equivalent to, and whether it is (only the owner, group and
// other entries).
func aclModeBits(acl []aclEntry) (bits uint32, equiv bool) {
	for _, e := range acl {
		switch e.tag {
		case aclUserObj:
			bits |= uint32(e.perm) << 6
		case aclGroupObj:
			bits |= uint32(e.perm) << 3
		case aclOther:
			bits |= uint32(e.perm)
		default:
			return 0, false
		}
	}
	return bits, true
}
