// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package staticpod reads the kube-apiserver's command line out of a kubeadm
// static pod manifest (/etc/kubernetes/manifests/kube-apiserver.yaml) the
// way the kubelet would run it, with the container's paths mapped back to
// the host through the pod's hostPath volumes. `kube-apiserver
// --validate-only --from-manifest` uses it, so an operator can check an
// edited manifest on the host before the kubelet sees it.
package staticpod

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Container is the name kubeadm gives the apiserver's container.
const Container = "kube-apiserver"

// Command is the apiserver's command line in a manifest.
type Command struct {
	// Args are the container's command and args after the program, with
	// every path the hostPath volumes cover mapped to the host.
	Args []string
	// Mounts map container paths to host paths, longest first.
	Mounts []Mount
}

// Mount is a hostPath volume mounted into the container.
type Mount struct {
	ContainerPath, HostPath string
}

// Read reads the manifest at file. It fails, naming the file and the field,
// when the file is not a Pod, has no kube-apiserver container (or, with one
// container only, no container), or that container has no command.
func Read(file string) (*Command, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if pod.APIVersion != "v1" || pod.Kind != "Pod" {
		return nil, fmt.Errorf("%s: apiVersion %q, kind %q: want a v1 Pod, as kubeadm writes to /etc/kubernetes/manifests", file, pod.APIVersion, pod.Kind)
	}
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == Container })
	if i < 0 && len(pod.Spec.Containers) == 1 {
		i = 0
	}
	if i < 0 {
		return nil, fmt.Errorf("%s: spec.containers: no container named %s", file, Container)
	}
	c := pod.Spec.Containers[i]
	field := fmt.Sprintf("spec.containers[%d]", i)
	command := append(slices.Clone(c.Command), c.Args...)
	if len(command) == 0 {
		return nil, fmt.Errorf("%s: %s.command: Required value: the container runs the image's entrypoint, so the flags cannot be read", file, field)
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	cmd := &Command{}
	for j, m := range c.VolumeMounts {
		host, ok := hostPaths[m.Name]
		if !ok {
			continue // not a hostPath volume: nothing on the host to read
		}
		if m.SubPath != "" {
			return nil, fmt.Errorf("%s: %s.volumeMounts[%d].subPath: mapping a subPath back to the host is not supported", file, field, j)
		}
		cmd.Mounts = append(cmd.Mounts, Mount{ContainerPath: path.Clean(m.MountPath), HostPath: path.Clean(host)})
	}
	slices.SortStableFunc(cmd.Mounts, func(a, b Mount) int { return len(b.ContainerPath) - len(a.ContainerPath) })
	for _, arg := range command[1:] {
		cmd.Args = append(cmd.Args, cmd.mapArg(arg))
	}
	return cmd, nil
}

// HostPath maps a path inside the container to the host: through the
// mount with the longest container path that holds it, or unchanged.
func (c *Command) HostPath(p string) string {
	if !path.IsAbs(p) {
		return p
	}
	clean := path.Clean(p)
	for _, m := range c.Mounts {
		if rest, ok := strings.CutPrefix(clean, m.ContainerPath); ok && (rest == "" || rest[0] == '/' || m.ContainerPath == "/") {
			return path.Join(m.HostPath, rest)
		}
	}
	return p
}

// mapArg maps the value of a --flag=value argument, and each element of a
// comma-separated value, to the host.
func (c *Command) mapArg(arg string) string {
	name, value, ok := strings.Cut(arg, "=")
	if !ok || !strings.HasPrefix(name, "-") {
		return c.HostPath(arg)
	}
	parts := strings.Split(value, ",")
	for i, p := range parts {
		parts[i] = c.HostPath(p)
	}
	return name + "=" + strings.Join(parts, ",")
}
