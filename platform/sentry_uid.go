package platform

// SentryUID is the real and saved uid of a root sentry once its guest is
// started (launch.KeepFromGuests): 4294967294, the last valid id, which
// the guest's user namespace leaves unmapped (launch/userns.go), so that
// no guest can take it. Linux lets a task signal another when its real
// or effective uid is the target's real or saved uid (kill_ok_by_cred),
// or with CAP_KILL over the target's user namespace; a root guest's uid
// is 0, and a sentry's 0 would let it kill any sandbox's sentry, which
// holds that sandbox's tmpfs. With this uid no guest's kill, tkill,
// tgkill, sigqueue, pidfd_send_signal or prlimit reaches a sentry; the
// sentry keeps its effective uid 0 and its capabilities.
const SentryUID = 1<<32 - 2
