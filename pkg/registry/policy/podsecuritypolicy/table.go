// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/printers"
	printerstorage "k8s.io/kubernetes/pkg/printers/storage"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
)

// columns are v1.24's `kubectl get psp` columns, names, types and
// descriptions as its printer declared them.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Priv", Type: "string", Description: "Determines if a pod can request to be run as privileged."},
	{Name: "Caps", Type: "string", Description: "A list of capabilities that can be requested to add to the container."},
	{Name: "SELinux", Type: "string", Description: "Strategy that will dictate the allowable labels that may be set."},
	{Name: "RunAsUser", Type: "string", Description: "Strategy that will dictate the allowable RunAsUser values that may be set."},
	{Name: "FsGroup", Type: "string", Description: "Strategy that will dictate what fs group is used by the SecurityContext."},
	{Name: "SupGroup", Type: "string", Description: "Strategy that will dictate what supplemental groups are used by the SecurityContext."},
	{Name: "ReadOnlyRootFs", Type: "string", Description: "When set to true, will force containers to run with a read only root file system."},
	{Name: "Volumes", Type: "string", Description: "White list of allowed volume plugins."},
}

// NewTableConvertor returns the server-side table of PodSecurityPolicy
// objects: v1.24's columns with the same cell values (ReadOnlyRootFs is a
// boolean cell in a string column, as v1.24 served it).
func NewTableConvertor() rest.TableConvertor {
	g := printers.NewTableGenerator()
	if err := g.TableHandler(columns, printPodSecurityPolicy); err != nil {
		panic(err)
	}
	if err := g.TableHandler(columns, printPodSecurityPolicyList); err != nil {
		panic(err)
	}
	return printerstorage.TableConvertor{TableGenerator: g}
}

func printPodSecurityPolicy(obj *policy.PodSecurityPolicy, _ printers.GenerateOptions) ([]metav1.TableRow, error) {
	caps := make([]string, len(obj.Spec.AllowedCapabilities))
	for i, c := range obj.Spec.AllowedCapabilities {
		caps[i] = string(c)
	}
	volumes := make([]string, len(obj.Spec.Volumes))
	for i, v := range obj.Spec.Volumes {
		volumes[i] = string(v)
	}
	row := metav1.TableRow{Object: runtime.RawExtension{Object: obj}}
	row.Cells = append(row.Cells, obj.Name, fmt.Sprintf("%v", obj.Spec.Privileged),
		strings.Join(caps, ","), string(obj.Spec.SELinux.Rule),
		string(obj.Spec.RunAsUser.Rule), string(obj.Spec.FSGroup.Rule),
		string(obj.Spec.SupplementalGroups.Rule), obj.Spec.ReadOnlyRootFilesystem,
		strings.Join(volumes, ","))
	return []metav1.TableRow{row}, nil
}

func printPodSecurityPolicyList(list *policy.PodSecurityPolicyList, options printers.GenerateOptions) ([]metav1.TableRow, error) {
	rows := make([]metav1.TableRow, 0, len(list.Items))
	for i := range list.Items {
		r, err := printPodSecurityPolicy(&list.Items[i], options)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}
