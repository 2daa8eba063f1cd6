package syscalls

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func aclValue(version uint32, entries ...aclEntry) []byte {
	v := binary.LittleEndian.AppendUint32(nil, version)
	for _, e := range entries {
		v = binary.LittleEndian.AppendUint16(v, e.tag)
		v = binary.LittleEndian.AppendUint16(v, e.perm)
		v = binary.LittleEndian.AppendUint32(v, e.id)
	}
	return v
}

// TestACLs: posix_acl_from_xattr, posix_acl_valid and posix_acl_equiv_mode
// as Linux has them, including what the differential test (xattrs.py)
// cannot set: ACLs with named entries or a mask, which the sentry does
// not keep but must still check as Linux does before it says so.
func TestACLs(t *testing.T) {
	const x = aclUndefinedID
	uo, gO, o := aclEntry{aclUserObj, 6, x}, aclEntry{aclGroupObj, 4, x}, aclEntry{aclOther, 1, x}
	mask := aclEntry{aclMask, 5, x}
	u, g := aclEntry{aclUser, 7, 1000}, aclEntry{aclGroup, 5, 100}
	for _, tc := range []struct {
		name      string
		value     []byte
		parseErr  error
		validErr  error
		bits      uint32
		equiv     bool
		noEntries bool
	}{
		{name: "minimal", value: aclValue(2, uo, gO, o), bits: 0641, equiv: true},
		{name: "header only", value: aclValue(2), noEntries: true},
		{name: "short", value: []byte{2, 0, 0}, parseErr: unix.EINVAL},
		{name: "ragged", value: append(aclValue(2, uo, gO, o), 0), parseErr: unix.EINVAL},
		{name: "version 1 before its size", value: append(aclValue(1, uo), 0), parseErr: unix.EOPNOTSUPP},
		{name: "unknown tag", value: aclValue(2, uo, aclEntry{0x40, 4, x}, o), parseErr: unix.EINVAL},
		{name: "named user without an id", value: aclValue(2, uo, aclEntry{aclUser, 4, x}, gO, mask, o), parseErr: unix.EINVAL},
		{name: "named user and mask", value: aclValue(2, uo, u, gO, mask, o)},
		{name: "named group and mask", value: aclValue(2, uo, gO, g, mask, o)},
		{name: "named user without mask", value: aclValue(2, uo, u, gO, o), validErr: unix.EINVAL},
		{name: "mask alone", value: aclValue(2, uo, gO, mask, o)},
		{name: "mask after other", value: aclValue(2, uo, gO, o, mask), validErr: unix.EINVAL},
		{name: "group before owner", value: aclValue(2, gO, uo, o), validErr: unix.EINVAL},
		{name: "no other", value: aclValue(2, uo, gO), validErr: unix.EINVAL},
		{name: "no group", value: aclValue(2, uo, o), validErr: unix.EINVAL},
		{name: "owner twice", value: aclValue(2, uo, uo, gO, o), validErr: unix.EINVAL},
		{name: "perm 8", value: aclValue(2, aclEntry{aclUserObj, 8, x}, gO, o), validErr: unix.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acl, err := parseACL(tc.value)
			if err != tc.parseErr {
				t.Fatalf("parse: %v, want %v", err, tc.parseErr)
			}
			if err != nil {
				return
			}
			if (acl == nil) != tc.noEntries {
				t.Fatalf("parse: %v entries, want none: %v", len(acl), tc.noEntries)
			}
			if acl == nil {
				return
			}
			if err := validACL(acl); err != tc.validErr {
				t.Fatalf("valid: %v, want %v", err, tc.validErr)
			}
			if tc.validErr != nil {
				return
			}
			if bits, equiv := aclModeBits(acl); bits != tc.bits || equiv != tc.equiv {
				t.Errorf("mode bits %#o equivalent %v, want %#o %v", bits, equiv, tc.bits, tc.equiv)
			}
		})
	}
}
