// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
)

// ChangedFields lists the field paths, in the API's names
// (spec.containers[0].securityContext.runAsNonRoot), where mutated differs
// from pod: what a policy's defaults would set. Warn and audit modes name
// them, since those modes apply none and the workload must set them itself
// once PodSecurityPolicy is gone.
func ChangedFields(pod, mutated *api.Pod) []string {
	before, errBefore := asJSON(pod)
	after, errAfter := asJSON(mutated)
	if err := errors.Join(errBefore, errAfter); err != nil {
		return []string{fmt.Sprintf("(fields not told: %v)", err)}
	}
	var paths []string
	diff("", before, after, &paths)
	slices.Sort(paths)
	return paths
}

func asJSON(pod *api.Pod) (any, error) {
	var v1 corev1.Pod
	if err := corev1conversion.Convert_core_Pod_To_v1_Pod(pod, &v1, nil); err != nil {
		return nil, err
	}
	data, err := json.Marshal(&v1)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}

// diff appends the paths under path where after differs from before.
func diff(path string, before, after any, paths *[]string) {
	switch a := after.(type) {
	case map[string]any:
		b, _ := before.(map[string]any)
		for k, v := range a {
			diff(join(path, k), b[k], v, paths)
		}
		for k := range b {
			if _, kept := a[k]; !kept {
				*paths = append(*paths, join(path, k))
			}
		}
		return
	case []any:
		if b, ok := before.([]any); ok && len(b) == len(a) {
			for i := range a {
				diff(fmt.Sprintf("%s[%d]", path, i), b[i], a[i], paths)
			}
			return
		}
	}
	if !reflect.DeepEqual(before, after) {
		*paths = append(*paths, path)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
