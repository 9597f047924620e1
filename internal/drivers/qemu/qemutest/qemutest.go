// Package qemutest is the test kit for code that runs real virtual
// machines: it finds the emulator (skipping the test without one, failing
// it when CI is set, so a missing qemu never hides a broken driver in CI)
// and builds, offline and from Debian packages already on the machine, a
// tiny bootable disk image.
//
// The image is a FAT file system without a partition table (a
// "superfloppy") made with mkfs.vfat and mtools, made bootable by syslinux
// (its boot sector chains to ldlinux.sys, which loads syslinux.cfg). It
// holds the Linux kernel of a Debian linux-image package (from /boot, or
// extracted with dpkg-deb from a .deb that CI downloads) and an initramfs
// written here: busybox-static as /bin/busybox, the kernel modules of the
// virtio network card and the ACPI power button, and an /init script that
// prints Marker lines on the serial console (ttyS0), configures the user
// network's guest address, serves HTTPMarker with busybox httpd on port
// GuestHTTPPort, and powers the machine off when the power button is
// pressed (QMP system_powerdown) after printing PowerdownMarker.
//
// Built images are cached in the temp dir under a key of every input, so
// the tests of one run (and later runs) build it once.
//
// It is for tests only and must never be imported by the product.
package qemutest

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// What the image's guest prints and serves.
const (
	BootMarker      = "DROVER-VM-BOOTED"
	ReadyMarker     = "DROVER-VM-READY"
	PowerdownMarker = "DROVER-VM-POWERDOWN"
	HTTPMarker      = "served-from-the-drover-test-vm"
	GuestHTTPPort   = 8080
)

// KernelDebDir is where CI (.ci/run) downloads the kernel package when the
// machine has no kernel in /boot; DROVER_TEST_KERNEL_DEB names a .deb too.
const KernelDebDir = "/var/cache/drover-test"

// Binary returns the emulator, or ends the test: skipped on a developer
// machine without qemu, failed when CI is set.
func Binary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		missing(t, "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")
	}
	return p
}

// KVM reports whether /dev/kvm can be opened (the VM can use KVM).
func KVM() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s", what)
	}
	t.Skipf("%s; skipping", what)
}

// modules are loaded by /init in this order (dependencies first). Those a
// kernel has built in are simply absent.
var modules = []string{
	"virtio", "virtio_ring", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	"failover", "net_failover", "virtio_net", "button", "evdev",
}

const initScript = `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /sbin /usr/bin /usr/sbin /tmp /www
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for pass in 1 2 3; do
	for m in %s; do
		[ -e /sys/module/$m ] || [ ! -f /lib/modules/$m.ko ] || insmod /lib/modules/$m.ko 2>/dev/null
	done
done
echo %s
ip link set lo up
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2
echo %s > /www/index.html
httpd -p %d -h /www
for e in /dev/input/event*; do
	( dd if=$e bs=24 count=1 >/dev/null 2>&1; echo %s; sync; poweroff -f ) &
done
echo %s
while true; do sleep 3600; done
`

var buildMu sync.Mutex

// Image returns the path of the cached bootable image (build it first if
// needed). Missing tools or packages end the test as Binary does.
func Image(t testing.TB) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	for _, tool := range []string{"mkfs.vfat", "mcopy", "syslinux"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, tool+" is not installed (apt-get install dosfstools mtools syslinux)")
		}
	}
	busybox := "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		missing(t, "busybox-static is not installed")
	}
	kernel, modDir, source := findKernel(t)

	init := fmt.Sprintf(initScript, strings.Join(modules, " "), BootMarker, HTTPMarker, GuestHTTPPort, PowerdownMarker, ReadyMarker)
	h := sha256.New()
	for _, f := range []string{kernel, busybox} {
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	fmt.Fprintf(h, "%s\n%s\n", source, init)
	key := hex.EncodeToString(h.Sum(nil))[:16]
	dir := filepath.Join(os.TempDir(), "drover-qemu-image-"+key)
	img := filepath.Join(dir, "disk.img")
	if _, err := os.Stat(img); err == nil {
		return img
	}

	work := t.TempDir()
	initrd := filepath.Join(work, "initrd")
	if err := writeInitramfs(initrd, busybox, init, modDir); err != nil {
		t.Fatalf("build initramfs: %v", err)
	}
	tmpImg := filepath.Join(work, "disk.img")
	cfg := filepath.Join(work, "syslinux.cfg")
	if err := os.WriteFile(cfg, []byte("DEFAULT linux\nPROMPT 0\nTIMEOUT 0\nLABEL linux\n  KERNEL vmlinuz\n  APPEND initrd=initrd console=ttyS0 loglevel=4 panic=-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "mkfs.vfat", "-C", tmpImg, "32768")
	run(t, "mcopy", "-i", tmpImg, kernel, "::vmlinuz")
	run(t, "mcopy", "-i", tmpImg, initrd, "::initrd")
	run(t, "mcopy", "-i", tmpImg, cfg, "::syslinux.cfg")
	run(t, "syslinux", "--install", tmpImg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Test binaries of other packages may build the same image at the
	// same time: each writes its own file and renames it into place.
	tmp, err := os.CreateTemp(dir, "disk.img.*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if err := copyFile(tmpImg, tmp.Name()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), img); err != nil {
		t.Fatal(err)
	}
	return img
}

// findKernel returns a kernel image and its modules directory: the
// installed one in /boot, or one extracted from a linux-image .deb.
func findKernel(t testing.TB) (kernel, modDir, source string) {
	t.Helper()
	if ks, _ := filepath.Glob("/boot/vmlinuz-*"); len(ks) > 0 {
		sort.Strings(ks)
		k := ks[len(ks)-1]
		ver := strings.TrimPrefix(filepath.Base(k), "vmlinuz-")
		return k, filepath.Join("/lib/modules", ver), k
	}
	debs, _ := filepath.Glob(filepath.Join(KernelDebDir, "linux-image-*.deb"))
	if d := os.Getenv("DROVER_TEST_KERNEL_DEB"); d != "" {
		debs = []string{d}
	}
	if len(debs) == 0 {
		missing(t, "no kernel: neither /boot/vmlinuz-* nor a linux-image .deb in "+KernelDebDir+" (see .ci/run)")
	}
	sort.Strings(debs)
	deb := debs[len(debs)-1]
	st, err := os.Stat(deb)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(os.TempDir(), "drover-qemu-kernel-"+shortHash(fmt.Sprintf("%s %d %d", deb, st.Size(), st.ModTime().UnixNano())))
	if _, err := os.Stat(out); err != nil {
		// Extracted beside it and renamed into place: a concurrent
		// extraction of the same package wins or loses whole.
		tmp, err := os.MkdirTemp(os.TempDir(), "drover-qemu-kernel-tmp-")
		if err != nil {
			t.Fatal(err)
		}
		run(t, "dpkg-deb", "-x", deb, tmp)
		if err := os.Rename(tmp, out); err != nil {
			_ = os.RemoveAll(tmp)
			if _, serr := os.Stat(out); serr != nil {
				t.Fatal(err)
			}
		}
	}
	ks, _ := filepath.Glob(filepath.Join(out, "boot", "vmlinuz-*"))
	if len(ks) == 0 {
		t.Fatalf("%s holds no boot/vmlinuz-*", deb)
	}
	ver := strings.TrimPrefix(filepath.Base(ks[0]), "vmlinuz-")
	mods := filepath.Join(out, "lib", "modules", ver)
	if _, err := os.Stat(mods); err != nil {
		mods = filepath.Join(out, "usr", "lib", "modules", ver)
	}
	return ks[0], mods, deb
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:16]
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// CopyImage copies the image into dir (a task directory) as name.
func CopyImage(t testing.TB, img, dir, name string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(img, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// writeInitramfs writes a gzipped newc cpio archive: /init, /bin/busybox
// and the wanted modules flat in /lib/modules.
func writeInitramfs(path, busybox, init, modDir string) error {
	type file struct {
		name string
		mode uint32
		data []byte
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return err
	}
	files := []file{
		{"bin", 0o040755, nil}, {"lib", 0o040755, nil}, {"lib/modules", 0o040755, nil},
		{"dev", 0o040755, nil}, {"proc", 0o040755, nil}, {"sys", 0o040755, nil},
		{"init", 0o100755, []byte(init)}, {"bin/busybox", 0o100755, bb},
	}
	want := map[string]bool{}
	for _, m := range modules {
		want[m+".ko"] = true
	}
	_ = filepath.WalkDir(modDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !want[d.Name()] {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil {
			files = append(files, file{"lib/modules/" + d.Name(), 0o100644, b})
			delete(want, d.Name())
		}
		return nil
	})
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	ino := 1
	hdr := func(name string, mode uint32, size int) {
		fmt.Fprintf(zw, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			ino, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, len(name)+1, 0)
		ino++
		io.WriteString(zw, name+"\x00")
		pad(zw, 110+len(name)+1)
	}
	for _, f := range files {
		hdr(f.name, f.mode, len(f.data))
		zw.Write(f.data)
		pad(zw, len(f.data))
	}
	hdr("TRAILER!!!", 0, 0)
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func pad(w io.Writer, n int) {
	if r := n % 4; r != 0 {
		w.Write(make([]byte, 4-r))
	}
}
