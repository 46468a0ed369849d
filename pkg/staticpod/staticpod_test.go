// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package staticpod

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: sidecar
    image: example.test/sidecar
    command: ["sleep", "infinity"]
  - name: kube-apiserver
    image: turnstile-k8s/kube-apiserver:v1.36.3_turnstile.1
    command:
    - kube-apiserver
    - --client-ca-file=/etc/kubernetes/pki/ca.crt
    - --admission-control-config-file=/etc/kubernetes/admission/admission.yaml
    - --service-account-key-file=/etc/kubernetes/pki/sa.pub,/etc/kubernetes/pki/extra/old.pub
    - --authorization-mode=Node,RBAC
    - --runtime-config=policy/v1beta1/podsecuritypolicies=true
    args:
    - --audit-log-path=/var/log/kubernetes/audit.log
    - --v
    - "2"
    volumeMounts:
    - {name: k8s-certs, mountPath: /etc/kubernetes/pki, readOnly: true}
    - {name: extra-certs, mountPath: /etc/kubernetes/pki/extra/}
    - {name: admission, mountPath: /etc/kubernetes/admission}
    - {name: scratch, mountPath: /tmp}
  volumes:
  - {name: k8s-certs, hostPath: {path: /srv/pki}}
  - {name: extra-certs, hostPath: {path: /srv/extra}}
  - {name: admission, hostPath: {path: /srv/turnstile/admission/}}
  - {name: scratch, emptyDir: {}}
`

func write(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kube-apiserver.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRead(t *testing.T) {
	cmd, err := Read(write(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--client-ca-file=/srv/pki/ca.crt",
		"--admission-control-config-file=/srv/turnstile/admission/admission.yaml",
		"--service-account-key-file=/srv/pki/sa.pub,/srv/extra/old.pub", // the longer mount wins
		"--authorization-mode=Node,RBAC",
		"--runtime-config=policy/v1beta1/podsecuritypolicies=true",
		"--audit-log-path=/var/log/kubernetes/audit.log", // not a hostPath mount: unchanged
		"--v", "2",
	}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args\n%s\nwant\n%s", strings.Join(cmd.Args, "\n"), strings.Join(want, "\n"))
	}
	for in, out := range map[string]string{
		"/etc/kubernetes/admission/erl.yaml": "/srv/turnstile/admission/erl.yaml",
		"/etc/kubernetes/admission":          "/srv/turnstile/admission",
		"/etc/kubernetes/admission2/x":       "/etc/kubernetes/admission2/x", // a prefix of the name, not of the path
		"/tmp/x":                             "/tmp/x",                       // emptyDir: nothing on the host
		"relative/x":                         "relative/x",
	} {
		if got := cmd.HostPath(in); got != out {
			t.Errorf("HostPath(%q) = %q, want %q", in, got, out)
		}
	}
}

func TestReadFails(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"not YAML", "{", "error converting YAML to JSON"},
		{"not a Pod", "apiVersion: v1\nkind: ConfigMap\n", `kind "ConfigMap": want a v1 Pod`},
		{"unknown field", "apiVersion: v1\nkind: Pod\nspec:\n  containerz: []\n", `unknown field "containerz"`},
		{"no apiserver container", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - {name: a, image: x}\n  - {name: b, image: y}\n", "spec.containers: no container named kube-apiserver"},
		{"no command", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - {name: kube-apiserver, image: x}\n", "spec.containers[0].command: Required value"},
		{"subPath", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: kube-apiserver\n    image: x\n    command: [kube-apiserver]\n    volumeMounts: [{name: v, mountPath: /a, subPath: b}]\n  volumes: [{name: v, hostPath: {path: /h}}]\n",
			"spec.containers[0].volumeMounts[0].subPath: mapping a subPath back to the host is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, tc.content)
			_, err := Read(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("error %v, want %q, naming the file", err, tc.want)
			}
		})
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing manifest: %v", err)
	}
}
