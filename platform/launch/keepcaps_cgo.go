package launch

// SECBIT_KEEP_CAPS for every thread of the sentry, set by a constructor of
// the C runtime while the process has one thread (threads inherit it; a
// prctl later would reach only the calling one): once the sentry's real
// and saved uids are platform.SentryUID (KeepFromGuests), a thread that
// takes a guest's nonzero effective uid would otherwise lose its
// permitted capabilities (cap_emulate_setxuid: no uid left 0) and could
// not take the sentry's identity back. execve clears the bit, so nothing
// the sentry starts inherits it.

/*
#include <sys/prctl.h>

__attribute__((constructor)) static void sentry_keep_caps(void) {
	prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
}
*/
import "C"
