package tracediff

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Print writes the human-readable report.
func (rep *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "sentry diff: %s\n", strings.Join(rep.Command, " "))
	fmt.Fprintf(w, "calls: native %d, sandbox %d; %d divergences\n", rep.Native.Calls, rep.Sandbox.Calls, rep.Diverge)
	if len(rep.Calls) > 0 {
		fmt.Fprintf(w, "\nfirst %d (task 1 ran COMMAND, 1.2 is its second child; #N, #S: index of the call in the task):\n", len(rep.Calls))
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "task\t#N\t#S\tsyscall\targs\tnative\tsandbox")
		for _, r := range rep.Calls {
			// The call's name and arguments get their own columns when
			// both runs made the same call or only one made it; for two
			// different calls each side shows its whole call.
			common := r.Native
			switch {
			case common == nil:
				common = r.Sandbox
			case r.Sandbox != nil && (r.Native.Syscall != r.Sandbox.Syscall || r.Native.Args != r.Sandbox.Args):
				common = nil
			}
			name, args := "-", "-"
			if common != nil {
				name, args = common.Syscall, clip(common.Args, 60)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Task, showIndex(r.NativeIndex), showIndex(r.SandboxIndex),
				name, args, showCall(r.Native, common), showCall(r.Sandbox, common))
		}
		tw.Flush()
		if rep.Diverge > len(rep.Calls) {
			fmt.Fprintf(w, "... and %d more (--max)\n", rep.Diverge-len(rep.Calls))
		}
	}
	fmt.Fprintf(w, "\nexit status: native %d, sandbox %d\n", rep.Native.ExitStatus, rep.Sandbox.ExitStatus)
	for _, o := range []struct{ name, native, sandbox string }{
		{"stdout", rep.Native.Stdout, rep.Sandbox.Stdout},
		{"stderr", rep.Native.Stderr, rep.Sandbox.Stderr},
	} {
		if o.native == o.sandbox {
			continue
		}
		fmt.Fprintf(w, "\n%s differs:\n--- native %s\n%s--- sandbox %s\n%s", o.name, o.name, clipOutput(o.native), o.name, clipOutput(o.sandbox))
	}
	if rep.Equal {
		fmt.Fprintln(w, "\nsame calls, exit status and output")
	} else {
		fmt.Fprintln(w, "\nDIFFERENT")
	}
}

func showIndex(i int) string {
	if i < 0 {
		return "-"
	}
	return strconv.Itoa(i)
}

// showCall renders one side of a divergence: just the result when the
// call is in the common columns, else the whole call.
func showCall(c, common *Call) string {
	switch {
	case c == nil:
		return "(no call)"
	case common != nil:
		return c.Result
	default:
		return clip(c.Syscall+"("+c.Args+")", 50) + " = " + c.Result
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// clipOutput keeps a differing output readable: at most 20 lines or 2 KiB.
func clipOutput(s string) string {
	const maxBytes, maxLines = 2048, 20
	cut := false
	if len(s) > maxBytes {
		s, cut = s[:maxBytes], true
	}
	// SplitAfter leaves an empty last element after a final newline: it
	// is not a line.
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > maxLines {
		s, cut = strings.Join(lines[:maxLines], ""), true
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if cut {
		s += "[truncated]\n"
	}
	return s
}
