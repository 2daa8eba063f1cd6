package tmpfs

import (
	"math"
	"strconv"
	"strings"
)

// DefaultRootMode is the root directory's mode when mode= is not given
// (shmem_init_fs_context: 0777 | S_ISVTX).
const DefaultRootMode = 01777

// bogoInodeSize is BOGO_INODE_SIZE: nr_inodes is accounted in units of
// it, so shmem_parse_one refuses counts whose product would overflow.
const bogoInodeSize = 1024

// MountOptions are the tmpfs mount options the sentry models, as
// shmem_parse_one leaves them in struct shmem_options: each value, and
// whether it was given (SHMEM_SEEN_BLOCKS, SHMEM_SEEN_INODES), since an
// option not given takes a default that depends on the host's RAM.
type MountOptions struct {
	// Blocks is size= in pages, rounded up; 0 is unlimited.
	Blocks    uint64
	BlocksSet bool
	// Inodes is nr_inodes=; 0 is unlimited.
	Inodes    uint64
	InodesSet bool
	// Mode is mode=, the root directory's permission bits.
	Mode uint32
	// UID and GID are uid= and gid=, the root directory's owner.
	UID, GID       uint32
	UIDSet, GIDSet bool
}

// OptionError is an option the parser refuses, worded as the kernel
// logs it (fs_param_bad_value, vfs_parse_fs_param, shmem_parse_one's
// invalfc) so an operator can search for the same message.
type OptionError struct {
	// Reason is "Bad value for", "Unknown parameter" or "Unsupported
	// parameter".
	Reason string
	Key    string
}

func (e *OptionError) Error() string { return "tmpfs: " + e.Reason + " '" + e.Key + "'" }

// unmodelled are tmpfs parameters Linux knows (shmem_fs_parameters) that
// the sentry's tmpfs does not model: refused as unsupported, not unknown.
var unmodelled = map[string]bool{
	"huge": true, "mpol": true, "nr_blocks": true,
	"inode32": true, "inode64": true, "noswap": true, "quota": true,
	"usrquota": true, "grpquota": true, "usrquota_block_hardlimit": true,
	"usrquota_inode_hardlimit": true, "grpquota_block_hardlimit": true,
	"grpquota_inode_hardlimit": true, "casefold": true, "strict_encoding": true,
}

// ParseMountOptions reads a tmpfs mount option string ("size=64m,mode=755")
// as mount(2)'s data reaches Linux: split as shmem_parse_monolithic does,
// each option parsed as shmem_parse_one does, later options overriding
// earlier ones. ramPages is totalram_pages(), of which size=N% is a share.
func ParseMountOptions(data string, ramPages uint64) (MountOptions, error) {
	o := MountOptions{Mode: DefaultRootMode}
	for _, opt := range splitOptions(data) {
		key, value, hasValue := strings.Cut(opt, "=")
		if err := o.set(key, value, hasValue, ramPages); err != nil {
			return MountOptions{}, err
		}
	}
	return o, nil
}

// splitOptions splits mount data at commas, except a comma followed by a
// digit, which shmem_next_opt keeps inside the option (mpol's node lists,
// "mpol=bind:0,2"); empty options are skipped.
func splitOptions(data string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(data); i++ {
		if i < len(data) && (data[i] != ',' || i+1 < len(data) && isDigit(data[i+1])) {
			continue
		}
		if i > start {
			out = append(out, data[start:i])
		}
		start = i + 1
	}
	return out
}

// set applies one option, as shmem_parse_one after fs_parse has checked
// its type: a value is required ("size" alone is a bad value) and must be
// non-empty.
func (o *MountOptions) set(key, value string, hasValue bool, ramPages uint64) error {
	bad := &OptionError{Reason: "Bad value for", Key: key}
	switch key {
	case "size", "nr_inodes", "mode", "uid", "gid":
		if !hasValue || value == "" {
			return bad
		}
	default:
		if unmodelled[key] {
			return &OptionError{Reason: "Unsupported parameter", Key: key}
		}
		return &OptionError{Reason: "Unknown parameter", Key: key}
	}
	switch key {
	case "size":
		size, rest := memparse(value)
		if strings.HasPrefix(rest, "%") {
			// A share of RAM, in the kernel's unsigned 64-bit
			// arithmetic (which wraps for absurd shares, as there).
			size = size * pageSize * ramPages / 100
			rest = rest[1:]
		}
		if rest != "" {
			return bad
		}
		// DIV_ROUND_UP(size, PAGE_SIZE), wrapping as in C.
		o.Blocks, o.BlocksSet = (size+pageSize-1)/pageSize, true
	case "nr_inodes":
		n, rest := memparse(value)
		if rest != "" || n > math.MaxUint64/bogoInodeSize {
			return bad
		}
		o.Inodes, o.InodesSet = n, true
	case "mode":
		// fsparam_u32oct: kstrtouint(value, 8), then only the
		// permission bits are kept.
		n, ok := kstrtouint(value, 8)
		if !ok {
			return bad
		}
		o.Mode = n & 07777
	case "uid", "gid":
		// fsparam_u32 (kstrtouint, base 0), then make_kuid: -1 is
		// no id.
		n, ok := kstrtouint(value, 0)
		if !ok || n == math.MaxUint32 {
			return bad
		}
		if key == "uid" {
			o.UID, o.UIDSet = n, true
		} else {
			o.GID, o.GIDSet = n, true
		}
	}
	return nil
}

// SizeLimit is Blocks in bytes for Options.SizeLimit: 0 is unlimited. A
// size past what an int64 holds (8 EiB and more) is capped there, a page
// short of what Linux would report in f_blocks.
func (o MountOptions) SizeLimit() int64 {
	if o.Blocks > math.MaxInt64/pageSize {
		return math.MaxInt64 &^ (pageSize - 1)
	}
	return int64(o.Blocks) * pageSize
}

// Data renders the options as mount(2) data that gives a kernel tmpfs the
// same limits and mode: the options given, with size= in bytes.
func (o MountOptions) Data() string {
	s := "mode=" + strconv.FormatUint(uint64(o.Mode), 8)
	if o.BlocksSet {
		// Blocks < 2^52, so the product fits.
		s += ",size=" + strconv.FormatUint(o.Blocks*pageSize, 10)
	}
	if o.InodesSet {
		s += ",nr_inodes=" + strconv.FormatUint(o.Inodes, 10)
	}
	if o.UIDSet {
		s += ",uid=" + strconv.FormatUint(uint64(o.UID), 10)
	}
	if o.GIDSet {
		s += ",gid=" + strconv.FormatUint(uint64(o.GID), 10)
	}
	return s
}

// memparse is the kernel's memparse: an unsigned number as
// simple_strtoull reads it with base 0 (0x for hex, a leading 0 for
// octal, no sign, wrapping past 2^64), then an optional suffix K, M, G,
// T, P or E (either case) multiplying by a power of 1024. It returns the
// value and the rest of s after what it read.
func memparse(s string) (uint64, string) {
	n, rest := simpleStrtoull(s)
	shift := 0
	if rest != "" {
		shift = 10 * (1 + strings.IndexByte("kmgtpe", lower(rest[0])))
	}
	if shift > 0 {
		n <<= shift
		rest = rest[1:]
	}
	return n, rest
}

// simpleStrtoull is simple_strtoull(s, &end, 0): it reads as many digits
// as there are, none at all giving 0 with s untouched, and silently wraps.
func simpleStrtoull(s string) (uint64, string) {
	base, digits := fixupRadix(s, 0)
	n, i, _ := parseInteger(digits, base, math.MaxUint64)
	if i == 0 {
		// No digit after a 0x prefix cannot happen (fixupRadix wants a
		// hex digit there); no digit at all leaves the string.
		return 0, s
	}
	return n, digits[i:]
}

// kstrtouint is kstrtouint(s, base, &res) succeeding: an optional '+',
// at least one digit, at most a trailing newline, no overflow of 32 bits.
func kstrtouint(s string, base int) (uint32, bool) {
	base, digits := fixupRadix(strings.TrimPrefix(s, "+"), base)
	n, i, over := parseInteger(digits, base, math.MaxUint32)
	if over || i == 0 || strings.TrimPrefix(digits[i:], "\n") != "" {
		return 0, false // -ERANGE or -EINVAL
	}
	return uint32(n), true
}

// parseInteger is _parse_integer: the value of the digits in base at the
// start of s (wrapping past 2^64), how many there are, and whether the
// value went past max on the way.
func parseInteger(s string, base int, max uint64) (n uint64, digits int, over bool) {
	for ; digits < len(s); digits++ {
		d, ok := digitValue(s[digits], base)
		if !ok {
			break
		}
		n = n*uint64(base) + d
		over = over || n > max
	}
	return n, digits, over
}

// fixupRadix is _parse_integer_fixup_radix: base 0 becomes 16 for "0x"
// before a hex digit, 8 for another leading 0, else 10; base 16 skips a
// "0x" prefix.
func fixupRadix(s string, base int) (int, string) {
	if base == 0 {
		switch {
		case len(s) >= 3 && s[0] == '0' && lower(s[1]) == 'x' && isHex(s[2]):
			base = 16
		case len(s) >= 1 && s[0] == '0':
			base = 8
		default:
			base = 10
		}
	}
	if base == 16 && len(s) >= 2 && s[0] == '0' && lower(s[1]) == 'x' {
		s = s[2:]
	}
	return base, s
}

func digitValue(c byte, base int) (uint64, bool) {
	var d int
	switch c = lower(c); {
	case isDigit(c):
		d = int(c - '0')
	case c >= 'a' && c <= 'f':
		d = int(c-'a') + 10
	default:
		return 0, false
	}
	return uint64(d), d < base
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { _, ok := digitValue(c, 16); return ok }
