package main

import (
	"os"
	"path/filepath"
	"testing"
)

// coreutilsScript exercises directories, links, attributes and archives
// with everyday tools; its output depends only on file system semantics.
const coreutilsScript = `set -e
mkdir -m 755 "$1/w" && cd "$1/w"
mkdir -p a/b; echo hi > a/b/f; ln -s f a/b/l; ln a/b/f a/b/h
chmod 640 a/b/f; chmod -R g+w a; chown 1:2 a/b/f; touch -d '2020-01-02 03:04:05' a/b/f
touch -h -d '2021-01-01' a/b/l
cp -a a c
stat -c '%n %A %u %g %s %h' a a/b a/b/f c/b/f c/b/l
stat -c '%n %Y' a/b/f c/b/f c/b/l
find . -newer a/b/f | sort
ls -U a/b; find a c
tar cf x.tar a && mkdir d && tar xf x.tar -C d && ls -laR d | sed 's/ [A-Z][a-z][a-z] .. ..:..//' | grep -v total
du -s a; mv c e; ls -a; rm -r e a; ls -a
printf 'x%.0s' $(seq 1 5000) > big; wc -c < big; truncate -s 100 big; stat -c '%s %b' big
mkdir -p "deep/$(printf 'x%.0s' $(seq 1 200))"; ls deep | wc -c
rm -rf deep big x.tar d; ls -a
mkdir t && (cd t && for i in $(seq 1 1000); do echo $i > f$i; done) && tar cf t.tar t && mkdir u && tar xf t.tar -C u
diff -r t u/t && ls u/t | wc -l && du -s t u | cut -f1 && rm -r t u t.tar
echo done
`

// TestCoreutilsSameAsNative runs the script on a kernel tmpfs and on the
// sandbox's tmpfs and compares the output.
func TestCoreutilsSameAsNative(t *testing.T) {
	script := filepath.Join(testBinDir, "coreutils.sh")
	if err := os.WriteFile(script, []byte(coreutilsScript), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/dev/shm", "sentry-coreutils-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	native := runCmd(t, "", "bash", script, dir)
	sb := sandboxed(t, nil, "bash", script, "/tmp")
	if native.code != 0 || native.stdout != sb.stdout || native.code != sb.code {
		t.Fatalf("native and sandbox differ\nnative (%d):\n%s%s\nsandbox (%d):\n%s%s",
			native.code, native.stdout, native.stderr, sb.code, sb.stdout, sb.stderr)
	}
}
