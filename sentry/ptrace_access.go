package sentry

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// MayReadProc decides, for a guest of a user namespace of its own, whether
// it may read the magic links of another guest task tid of the same
// namespace, as Linux's ptrace_may_access with PTRACE_MODE_READ_FSCREDS:
// decided is false where the sentry leaves the answer to the kernel, asked
// as the task (another namespace, a task not the sentry's, a guest of the
// sentry's own namespace). A sentry thread cannot be asked in the guest's
// stead here: it is of the initial namespace, where the guest's
// capabilities are not, so the kernel would refuse it what Linux grants
// the guest (a nobody guest's ls -l /proc/$$/fd/5 of its shell's file).
//
// __ptrace_may_access: the caller's fsuid and fsgid equal to the target's
// real, effective and saved ids, or CAP_SYS_PTRACE in the target's
// namespace; then a non-dumpable target wants CAP_SYS_PTRACE; then
// cap_ptrace_access_check: the target's permitted set within the caller's
// effective set, or CAP_SYS_PTRACE. Whether the target is dumpable the
// sentry reads from the owner of its /proc directory (task_dump_owner:
// root of its namespace for a non-dumpable one), which cannot tell for a
// target whose euid is root: taken as dumpable.
func (t *Task) MayReadProc(tid int32) (decided bool, err error) {
	c := t.Creds()
	if !c.Foreign {
		return false, nil
	}
	// The walk asks this as the guest (Walk's second pass): nothing here
	// may need more than the guest has (status and the directory's owner
	// are anyone's; the namespaces are the sentry's record).
	o := t.k.Task(tid)
	if o == nil || c.UserNS == "" || o.Creds().UserNS != c.UserNS {
		return false, nil
	}
	dir := "/proc/" + strconv.Itoa(int(tid))
	data, err := os.ReadFile(dir + "/status")
	if err != nil {
		return true, unix.ENOENT
	}
	target, ok := parsePtraceCreds(string(data))
	if !ok {
		return false, nil
	}
	ptrace := c.Caps.Has(vfs.CapSysPtrace)
	sameIDs := true
	for i := 0; i < 3; i++ {
		sameIDs = sameIDs && target.uid[i] == c.UID && target.gid[i] == c.GID
	}
	if !sameIDs && !ptrace {
		return true, unix.EACCES
	}
	var st unix.Stat_t
	if target.uid[1] != 0 && unix.Stat(dir, &st) == nil && st.Uid == 0 && !ptrace {
		// Not dumpable.
		return true, unix.EACCES
	}
	if target.permitted&^c.Caps != 0 && !ptrace {
		return true, unix.EACCES
	}
	return true, nil
}

// ptraceCreds are what ptrace_may_access compares of a target: its real,
// effective and saved uid and gid, and its permitted capabilities.
type ptraceCreds struct {
	uid, gid  [3]uint32
	permitted vfs.CapSet
}

// parsePtraceCreds takes the Uid, Gid and CapPrm lines of a
// /proc/PID/status.
func parsePtraceCreds(status string) (ptraceCreds, bool) {
	var c ptraceCreds
	p, err := parseStatus(status)
	if err != nil || p.ids != 2 || !p.hasPrm {
		return c, false
	}
	copy(c.uid[:], p.uid[:3])
	copy(c.gid[:], p.gid[:3])
	c.permitted = p.capPrm
	return c, true
}
