// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	e2eimage "k8s.io/kubernetes/test/utils/image"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/build/oci"
)

// The rest of the e2e framework's images (make e2e-images), on a real node:
// each runs under its exact name with nothing pulled and does what the
// framework's specs use it for. `make test-e2e-images` runs it as root.
func TestE2EImages(t *testing.T) {
	archive := os.Getenv("TURNSTILE_E2E_IMAGES")
	if archive == "" {
		t.Skip("needs TURNSTILE_E2E_IMAGES (make e2e-images' archive); `make test-e2e-images` runs it")
	}
	lu := startLocalNodes(t, 1, "-e2e-images", archive)
	config, err := clientcmd.BuildConfigFromFlags("", lu.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(config)
	ctx := t.Context()
	kube := kubernetesModuleDir(t)
	svc, err := client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubernetesIP := svc.Spec.ClusterIP

	t.Run("images", func(t *testing.T) {
		// Each pod's output, from a command that exits.
		for _, tc := range []struct {
			name, image string
			command     []string
			env         []corev1.EnvVar
			security    *corev1.SecurityContext
			want        []string
		}{{
			// The Services and DNS specs' tools: OpenBSD nc with -v -t, dig.
			name: "agnhost-nc-dig", image: oci.AgnhostImage,
			command: []string{"/bin/sh", "-c", "nc -v -t -w 3 kubernetes.default 443 </dev/null && dig +short kubernetes.default.svc.cluster.local"},
			want:    []string{"succeeded", kubernetesIP},
		}, {
			name: "agnhost-prev", image: oci.AgnhostPrevImage, command: []string{"/agnhost", "--version"}, want: []string{"2."},
		}, {
			// sh passes on a variable whose name is no shell identifier
			// (the envFrom specs run `sh -c env`).
			name: "busybox-env", image: oci.BusyBoxImage, command: []string{"sh", "-c", "env"},
			env:  []corev1.EnvVar{{Name: "data-1", Value: "value-1"}, {Name: "#@!data-1", Value: "value-2"}},
			want: []string{"data-1=value-1", "#@!data-1=value-2"},
		}, {
			// Anything else is ash's, with ash's error texts (the Kubelet
			// read-only root file system spec compares this one), and wget
			// -T exits instead of crashing (busybox 1.37).
			name: "busybox-ash-wget", image: oci.BusyBoxImage,
			command:  []string{"/bin/sh", "-c", "echo test > /file; wget -T 1 -q -O - http://127.0.0.1:1/; echo wget exited $?"},
			security: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
			want:     []string{"/bin/sh: can't create /file: Read-only file system\n", "wget exited 1"},
		}, {
			name: "nonroot", image: oci.E2EImage(e2eimage.NonRoot), command: []string{"id", "-u"}, want: []string{"1234"},
		}, {
			name: "nonewprivs-escalates", image: oci.E2EImage(e2eimage.Nonewprivs),
			security: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), AllowPrivilegeEscalation: ptr.To(true)},
			want:     []string{"Effective uid: 0"},
		}, {
			name: "nonewprivs-does-not", image: oci.E2EImage(e2eimage.Nonewprivs),
			security: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), AllowPrivilegeEscalation: ptr.To(false)},
			want:     []string{"Effective uid: 1000"},
		}, {
			// glibc's resolver through CoreDNS, and the CoreDNS it carries.
			name: "glibc-dns-testing", image: oci.E2EImage(e2eimage.GlibcDnsTesting),
			command: []string{"sh", "-c", "getent hosts kubernetes.default.svc.cluster.local && /coredns -version"},
			want:    []string{kubernetesIP, "CoreDNS-"},
		}, {
			name: "perl", image: oci.E2EImage(e2eimage.Perl), command: []string{"perl", "-e", "print 6*7, qq(\\n)"}, want: []string{"42"},
		}, {
			name: "sample-apiserver", image: oci.E2EImage(e2eimage.APIServer), command: []string{"/sample-apiserver", "--help"},
			want: []string{"--etcd-servers"},
		}, {
			// The Aggregator spec runs it beside the sample apiserver.
			name: "etcd", image: oci.E2EImage(e2eimage.Etcd), command: []string{"etcd", "--version"}, want: []string{"etcd Version: "},
		}, {
			name: "ipc-utils", image: oci.E2EImage(e2eimage.IpcUtils), command: []string{"sh", "-c", "ipcmk -M 4096 && ipcs -m"},
			want: []string{"Shared memory id:", "4096"},
		}, {
			name: "distroless-iptables", image: "registry.k8s.io/build-image/distroless-iptables:v0.9.6", command: []string{"iptables", "--version"},
			want: []string{"iptables v1."},
		}} {
			if tc.name == "distroless-iptables" && !slices.ContainsFunc(oci.E2EImages(), func(i oci.NodeImage) bool { return i.Name == tc.name }) {
				continue // the line's e2e framework runs it no more (v1.38)
			}
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				pod := testPod(tc.name, tc.image)
				pod.Spec.RestartPolicy = corev1.RestartPolicyNever
				pod.Spec.Containers[0].Command, pod.Spec.Containers[0].Env = tc.command, tc.env
				pod.Spec.Containers[0].SecurityContext = tc.security
				out := runToCompletion(ctx, t, client, pod)
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("%s printed no %q:\n%s", tc.image, w, out)
					}
				}
			})
		}

		// The servers, asked over HTTP from the host, which routes the pod
		// ranges.
		for _, tc := range []struct {
			name, image, path string
			port              int
			want              string
		}{
			{"kitten", oci.E2EImage(e2eimage.Kitten), "/data.json", 80, readFile(t, filepath.Join(kube, "test/images/kitten/html/data.json"))},
			{"nautilus", oci.E2EImage(e2eimage.Nautilus), "/data.json", 80, readFile(t, filepath.Join(kube, "test/images/nautilus/html/data.json"))},
			{"nginx", oci.E2EImage(e2eimage.Nginx), "/", 80, "Welcome to nginx!"},
			{"nginx-new", oci.E2EImage(e2eimage.NginxNew), "/", 80, "Welcome to nginx!"},
			{"agnhost-netexec", oci.AgnhostImage, "/hostname", 8080, "agnhost-netexec"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				pod := testPod(tc.name, tc.image)
				if tc.name == "agnhost-netexec" {
					pod.Spec.Containers[0].Args = []string{"netexec", "--http-port=8080"}
				}
				ip := runServer(ctx, t, client, pod)
				body := httpGet(ctx, t, fmt.Sprintf("http://%s:%d%s", ip, tc.port, tc.path))
				if !strings.Contains(body, tc.want) {
					t.Errorf("GET %s from %s: %q lacks %q", tc.path, tc.image, body, tc.want)
				}
			})
		}

		// The HPA specs' load: the consumer runs ./consume-cpu/consume-cpu.
		t.Run("resource-consumer", func(t *testing.T) {
			t.Parallel()
			ip := runServer(ctx, t, client, testPod("resource-consumer", oci.E2EImage(e2eimage.ResourceConsumer)))
			url := fmt.Sprintf("http://%s:8080/ConsumeCPU?millicores=50&durationSec=1", ip)
			resp, err := http.Post(url, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST %s: %s", url, resp.Status)
			}
			var logs string
			err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
				logs = podLogs(ctx, client, "resource-consumer")
				return strings.Contains(logs, "ConsumeCPU millicores: 50"), nil
			})
			time.Sleep(2 * time.Second) // consume-cpu's second
			if logs = podLogs(ctx, client, "resource-consumer"); err != nil || strings.Contains(logs, "Error while consuming CPU") {
				t.Errorf("consume-cpu did not run (%v):\n%s", err, logs)
			}
		})

		t.Run("regression-issue-74839", func(t *testing.T) {
			t.Parallel()
			pod := testPod("regression-issue-74839", oci.E2EImage(e2eimage.RegressionIssue74839))
			// As the conntrack spec runs it: it probes its own address.
			pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
			runServer(ctx, t, client, pod)
			var logs string
			err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
				logs = podLogs(ctx, client, "regression-issue-74839")
				return strings.Contains(logs, "listen on 0.0.0.0:"), nil
			})
			if err != nil {
				t.Errorf("it does not listen (%v); logs:\n%s", err, logs)
			}
		})
	})

	t.Run("pods pulled nothing", func(t *testing.T) { checkNothingPulled(ctx, t, client) })
	lu.interrupt(t)
}

func testPod(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}
}

// runToCompletion runs pod to its end and returns its logs; a pod that
// fails is an error, with them.
func runToCompletion(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *corev1.Pod) string {
	t.Helper()
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs := podLogs(ctx, client, pod.Name)
	if err != nil || phase != corev1.PodSucceeded {
		t.Fatalf("pod %s (%s): %s, %v:\n%s", pod.Name, pod.Spec.Containers[0].Image, phase, err, logs)
	}
	return logs
}

// runServer starts pod and returns its IP once it runs.
func runServer(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *corev1.Pod) string {
	t.Helper()
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var p *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if p, err = client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s (%s) not running: %v\n%+v\n%s", pod.Name, pod.Spec.Containers[0].Image, err, p.Status, podLogs(ctx, client, pod.Name))
	}
	return p.Status.PodIP
}

func podLogs(ctx context.Context, client kubernetes.Interface, name string) string {
	out, err := client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(no logs: %v)", err)
	}
	return string(out)
}

// httpGet polls url until it answers 200 (a server takes a moment to
// listen after its container starts) and returns the body.
func httpGet(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	var body string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("GET %s: %v (last body %q)", url, err, body)
	}
	return body
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// kubernetesModuleDir is the pinned k8s.io/kubernetes module's directory,
// where upstream's test images' files are.
func kubernetesModuleDir(t *testing.T) string {
	return goListModule(t, "{{.Dir}}", "k8s.io/kubernetes")
}

// moduleVersion is the version of a module in the graph being tested (the
// line's, when GOFLAGS names its go.mod).
func moduleVersion(t *testing.T, path string) string {
	return goListModule(t, "{{.Version}}", path)
}

func goListModule(t *testing.T, format, path string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", format, path).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}
