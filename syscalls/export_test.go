package syscalls

// FileIoctls is fileIoctls, for the tests of package syscalls_test.
var FileIoctls = fileIoctls
