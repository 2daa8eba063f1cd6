package launch

// The signals the sentry's caller left ignored and blocked, read before the
// Go runtime starts: it installs its own handler on every signal but an
// ignored SIGHUP or SIGINT, so by main the other ignored ones are lost
// (os/signal.Ignored knows only those two), and it unblocks signals it
// needs. A constructor of the C runtime runs first.

/*
#include <signal.h>

static unsigned long long sentry_initial_ignored, sentry_initial_blocked;

__attribute__((constructor)) static void sentry_save_ignored(void) {
	for (int s = 1; s <= 64; s++) {
		struct sigaction sa;
		if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			sentry_initial_ignored |= 1ULL << (s - 1);
	}
	sigset_t set;
	if (sigprocmask(SIG_BLOCK, NULL, &set) == 0)
		for (int s = 1; s <= 64; s++)
			if (sigismember(&set, s) == 1)
				sentry_initial_blocked |= 1ULL << (s - 1);
}

static unsigned long long sentry_ignored(void) { return sentry_initial_ignored; }
static unsigned long long sentry_blocked(void) { return sentry_initial_blocked; }
*/
import "C"

// InitialIgnored is the set of signals (bit N-1 for signal N) the process
// started with ignored: what a program exec'd by the sentry's caller would
// inherit ignored (exec resets caught signals, keeps ignored ones).
func InitialIgnored() uint64 {
	return uint64(C.sentry_ignored())
}

// InitialBlocked is the signal mask the process started with (bit N-1 for
// signal N): what a program exec'd by the sentry's caller would inherit.
func InitialBlocked() uint64 {
	return uint64(C.sentry_blocked())
}
