// Command nodeimages writes the images a local Kubernetes node needs, so that
// nothing is ever pulled: pause, upstream's e2e busybox and agnhost, and
// CoreDNS, each a docker-archive tarball holding all of its names
// (oci.NodeImages) for `ctr -n k8s.io images import`. `make node-images`
// builds the binaries it packs and runs it:
//
//	nodeimages -out _output/images/node -bin _output/bin -kubernetes DIR
//
// where -bin holds pause, agnhost and coredns, and DIR is the
// k8s.io/kubernetes module's directory (agnhost's porter certificate).
// Busybox is Debian's busybox-static.
//
// An image whose inputs (files, their modes and contents, the config, this
// program) are those of its last build is not written again: the sha256 of
// the inputs is kept next to the tarball, in NAME.tar.inputs.
package main

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

// created is every file's time and the images' creation time, so that the
// same inputs give the same images.
var created = time.Unix(0, 0).UTC()

// envPath is what the busybox based images run with, as upstream's Alpine based
// ones.
const envPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// wget runs busybox wget under busybox timeout instead of giving it -T:
// Debian's busybox 1.35 wget crashes (SIGSEGV) on -T N when it cannot
// connect, and e2e tests call `wget -T N`. It only takes effect when wget
// is exec'd (a container's command, /bin/wget, env wget): busybox's ash is
// built standalone (FEATURE_SH_STANDALONE), so `sh -c 'wget ...'` runs the
// wget applet itself, whatever PATH holds.
const wget = `#!/bin/sh
# Debian's busybox 1.35 wget crashes on -T N: run it under timeout N instead.
timeout=
n=$#
i=0
while [ "$i" -lt "$n" ]; do
	a=$1
	shift
	i=$((i + 1))
	case $a in
	-T)
		timeout=$1
		shift
		i=$((i + 1))
		continue
		;;
	-T*)
		timeout=${a#-T}
		continue
		;;
	--timeout=*)
		timeout=${a#--timeout=}
		continue
		;;
	esac
	set -- "$@" "$a"
done
if [ -n "$timeout" ]; then
	exec /bin/busybox timeout "$timeout" /bin/busybox wget "$@"
fi
exec /bin/busybox wget "$@"
`

type spec struct {
	image  oci.NodeImage
	layers [][]oci.Entry
	config oci.Config
}

func main() {
	out := flag.String("out", "_output/images/node", "directory for the tarballs")
	bin := flag.String("bin", "_output/bin", "directory holding pause, agnhost and coredns")
	kubernetes := flag.String("kubernetes", "", "the k8s.io/kubernetes module's directory (go list -m -f '{{.Dir}}' k8s.io/kubernetes)")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox (Debian's busybox-static)")
	version := flag.String("kubernetes-version", "", "with -control-plane, the version kubeadm names the control-plane images after (v1.36.3)")
	controlPlane := flag.Bool("control-plane", false, "also write kubeadm's kube-controller-manager, kube-scheduler and etcd images from the binaries in -bin")
	flag.Parse()
	if !*controlPlane {
		*version = ""
	} else if *version == "" {
		fmt.Fprintln(os.Stderr, "nodeimages: -control-plane needs -kubernetes-version")
		os.Exit(2)
	}
	if err := run(os.Stdout, *out, *bin, *kubernetes, *busybox, *version); err != nil {
		fmt.Fprintf(os.Stderr, "nodeimages: %v\n", err)
		os.Exit(1)
	}
}

func run(w io.Writer, out, bin, kubernetes, busybox, controlPlaneVersion string) error {
	if kubernetes == "" {
		return fmt.Errorf("-kubernetes is required: the k8s.io/kubernetes module's directory")
	}
	specs, err := specs(bin, kubernetes, busybox)
	if err != nil {
		return err
	}
	if controlPlaneVersion != "" {
		cp, err := controlPlaneSpecs(bin, controlPlaneVersion)
		if err != nil {
			return err
		}
		specs = append(specs, cp...)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	self, err := selfDigest()
	if err != nil {
		return err
	}
	for _, s := range specs {
		if err := build(w, out, self, s); err != nil {
			return fmt.Errorf("%s: %w", s.image.Name, err)
		}
	}
	return nil
}

// build writes s's tarball unless its inputs are those of the last build.
func build(w io.Writer, out, self string, s spec) error {
	start := time.Now()
	tarball := filepath.Join(out, s.image.Tarball)
	key, err := inputsKey(self, s)
	if err != nil {
		return err
	}
	stamp := tarball + ".inputs"
	if old, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(old)) == key {
		if _, err := os.Stat(tarball); err == nil {
			fmt.Fprintf(w, "nodeimages: %-8s up to date  %s\n", s.image.Name, tarball)
			return nil
		}
	}
	layers := make([]v1.Layer, len(s.layers))
	for i, entries := range s.layers {
		if layers[i], err = oci.Layer(entries, created); err != nil {
			return err
		}
	}
	img, err := oci.NewImage(s.config, layers...)
	if err != nil {
		return err
	}
	// Remove the stamp first: a failed write must not leave an old
	// tarball that looks up to date.
	if err := os.Remove(stamp); err != nil && !os.IsNotExist(err) {
		return err
	}
	id, err := oci.WriteDockerArchiveTags(tarball, img, s.image.Tags...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(stamp, []byte(key+"\n"), 0o644); err != nil {
		return err
	}
	fi, err := os.Stat(tarball)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "nodeimages: %-8s built       %s (%.1f MiB, %s, image ID %s) in %s\n", s.image.Name, tarball,
		float64(fi.Size())/(1<<20), strings.Join(s.image.Tags, " "), id, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// inputsKey is the sha256 of everything an image is built from.
func inputsKey(self string, s spec) (string, error) {
	h := sha256.New()
	cfg, err := json.Marshal(s.config)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "nodeimages %s\ntags %q\nconfig %s\n", self, s.image.Tags, cfg)
	for _, entries := range s.layers {
		d, err := oci.InputsDigest(entries)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "layer %s\n", d)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// selfDigest is the sha256 of this program, so that changing how images are
// built rebuilds them.
func selfDigest() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return oci.FileSHA256(exe)
}

func specs(bin, kubernetes, busybox string) ([]spec, error) {
	byName := map[string]oci.NodeImage{}
	for _, img := range oci.NodeImages() {
		byName[img.Name] = img
	}
	for _, f := range []string{filepath.Join(bin, "pause"), filepath.Join(bin, "agnhost"), filepath.Join(bin, "coredns"), busybox} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("%w (make node-images builds the binaries)", err)
		}
	}
	busyboxLayer, err := busyboxEntries(busybox)
	if err != nil {
		return nil, err
	}
	porter := filepath.Join(kubernetes, "test", "images", "agnhost", "porter")
	return []spec{{
		// build/pause/Dockerfile: FROM scratch, /pause, USER 65535:65535.
		image:  byName["pause"],
		layers: [][]oci.Entry{{oci.FileFrom("pause", 0o755, filepath.Join(bin, "pause"))}},
		config: oci.Config{Entrypoint: []string{"/pause"}, User: "65535:65535", Created: created},
	}, {
		image:  byName["busybox"],
		layers: [][]oci.Entry{busyboxLayer},
		config: oci.Config{Env: []string{envPath}, Cmd: []string{"sh"}, Created: created},
	}, {
		// test/images/agnhost/Dockerfile, without its Alpine tools, the
		// CoreDNS 1.6.2 it downloads and the fake registry's images.
		image: byName["agnhost"],
		layers: [][]oci.Entry{busyboxLayer, {
			oci.FileFrom("agnhost", 0o755, filepath.Join(bin, "agnhost")),
			// The entrypoint-tester tests override the entrypoint with it.
			oci.Symlink("agnhost-2", "agnhost"),
			// netexec's uploads.
			oci.Dir("uploads", 0o755),
			// porter's TLS server.
			oci.FileFrom("localhost.crt", 0o644, filepath.Join(porter, "localhost.crt")),
			oci.FileFrom("localhost.key", 0o644, filepath.Join(porter, "localhost.key")),
			// The SupplementalGroups test's user and group defined in the image.
			oci.File("etc/passwd", 0o644, []byte(passwd+"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n")),
			oci.File("etc/group", 0o644, []byte(group+"user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")),
			{Path: "home/user-defined-in-image", Mode: fs.ModeDir | 0o755, UID: 1000, GID: 1000},
		}},
		config: oci.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: []string{envPath},
			ExposedPorts: []string{"80/tcp", "8080/tcp", "8081/tcp", "9376/tcp", "5000/tcp"}, Created: created},
	}, {
		// As upstream's CoreDNS image: static, distroless nonroot (65532).
		image: byName["coredns"],
		layers: [][]oci.Entry{{
			oci.FileFrom("coredns", 0o755, filepath.Join(bin, "coredns")),
			oci.File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")),
			oci.File("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
			{Path: "home/nonroot", Mode: fs.ModeDir | 0o700, UID: 65532, GID: 65532},
			oci.Dir("tmp", 0o777|fs.ModeSticky),
		}},
		config: oci.Config{Entrypoint: []string{"/coredns"}, User: "65532:65532",
			ExposedPorts: []string{"53/tcp", "53/udp"}, Created: created},
	}}, nil
}

// controlPlaneSpecs are kubeadm's control-plane images other than the
// apiserver: each binary FROM scratch in /usr/local/bin, on the PATH, as
// kubeadm's static pods call it by name.
func controlPlaneSpecs(bin, version string) ([]spec, error) {
	var out []spec
	for _, img := range oci.ControlPlaneImages(version) {
		binary := filepath.Join(bin, img.Name)
		if _, err := os.Stat(binary); err != nil {
			return nil, fmt.Errorf("%w (make tools builds it)", err)
		}
		out = append(out, spec{
			image:  img,
			layers: [][]oci.Entry{{oci.FileFrom("usr/local/bin/"+img.Name, 0o755, binary), oci.Dir("tmp", 0o777|fs.ModeSticky)}},
			config: oci.Config{Env: []string{envPath}, Created: created},
		})
	}
	return out, nil
}

const (
	passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group  = "root:x:0:\nnobody:x:65534:\n"
)

// busyboxEntries is a busybox userland: every applet a symbolic link in
// /bin, sh being busybox's ash, and wget the wrapper above.
func busyboxEntries(busybox string) ([]oci.Entry, error) {
	// Debian's busybox package is dynamically linked, and the images have
	// no libc: only busybox-static will do.
	f, err := elf.Open(busybox)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s is dynamically linked: install Debian's busybox-static", busybox)
		}
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	entries := []oci.Entry{
		oci.FileFrom("bin/busybox", 0o755, busybox),
		oci.File("bin/wget", 0o755, []byte(wget)),
		oci.File("etc/passwd", 0o644, []byte(passwd)),
		oci.File("etc/group", 0o644, []byte(group)),
		oci.Dir("root", 0o700),
		oci.Dir("tmp", 0o777|fs.ModeSticky),
		oci.Dir("var/tmp", 0o777|fs.ModeSticky),
		oci.Dir("usr/bin", 0o755),
		oci.Dir("usr/sbin", 0o755),
		oci.Dir("sbin", 0o755),
		oci.Dir("home", 0o755),
	}
	applets := strings.Fields(string(list))
	hasSh := false
	for _, a := range applets {
		switch {
		case a == "busybox" || a == "wget":
			continue
		case strings.Contains(a, "/"):
			return nil, fmt.Errorf("%s --list: applet %q", busybox, a)
		}
		hasSh = hasSh || a == "sh"
		entries = append(entries, oci.Symlink("bin/"+a, "busybox"))
	}
	if !hasSh || len(applets) < 100 {
		return nil, fmt.Errorf("%s --list: %d applets, sh among them: %v", busybox, len(applets), hasSh)
	}
	return entries, nil
}
