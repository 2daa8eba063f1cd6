package syscalls

import (
	"strings"
	"testing"
)

// TestParseShebang follows binfmt_script's load_script on the lines that
// exercise its rules.
func TestParseShebang(t *testing.T) {
	long := "#!/bin/" + strings.Repeat("x", 300)
	for _, tc := range []struct {
		head, interp, arg string
		ok                bool
	}{
		{"#!/bin/sh\necho", "/bin/sh", "", true},
		{"#!/bin/sh", "/bin/sh", "", true},
		{"#! \t/bin/sh  -e -x \t\nrest", "/bin/sh", "-e -x", true},
		{"#!/usr/bin/env python3\n", "/usr/bin/env", "python3", true},
		{"#!\n", "", "", false},
		{"#!   \t\n", "", "", false},
		// No newline in the buffer and the name runs to its end: it may
		// be truncated, so ENOEXEC.
		{long[:binprmBufSize], "", "", false},
		// A name ended by a blank within the buffer is whole; the line
		// then ends before the buffer's last byte (load_script writes
		// its NUL there).
		{"#!/bin/sh " + strings.Repeat("a", 300)[:binprmBufSize-10], "/bin/sh", strings.Repeat("a", binprmBufSize-11), true},
		{"#!/bin/sh\x00junk\n", "/bin/sh", "", true},
	} {
		interp, arg, ok := parseShebang([]byte(tc.head))
		if interp != tc.interp || arg != tc.arg || ok != tc.ok {
			t.Errorf("parseShebang(%.40q) = %q, %q, %v; want %q, %q, %v", tc.head, interp, arg, ok, tc.interp, tc.arg, tc.ok)
		}
	}
}
