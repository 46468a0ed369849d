// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kubectl-psp is the kubectl plugin for leaving PodSecurityPolicy
// (`kubectl psp ...`): it reads the cluster through the usual kubeconfig
// and writes nothing to it. See docs/psp-migration.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	psapolicy "k8s.io/pod-security-admission/policy"

	pspclient "github.com/turnstile-k8s/turnstile/pkg/client/clientset/versioned"
	"github.com/turnstile-k8s/turnstile/pkg/pspmigration"
	pspengine "github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
)

func main() {
	// convert and verify run upstream's admission policy plugins in-process,
	// whose informers log their progress: kubectl psp prints its own.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	if err := newCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newCommand(out, errOut io.Writer) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:           "kubectl-psp",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl psp"},
		Short:         "Leave PodSecurityPolicy: which level each workload meets, and what replaces the policies",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	flags.AddFlags(root.PersistentFlags())
	var output string
	var all bool
	report := &cobra.Command{
		Use:   "report",
		Short: "For every workload: the policy that admits it, what the policy changes, the strictest Pod Security Standards level it meets; per namespace the enforce level that admits everything",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			namespace := ""
			if !all && flags.Namespace != nil && *flags.Namespace != "" {
				namespace = *flags.Namespace
			}
			r, err := buildReport(cmd.Context(), flags, namespace, nil)
			if err != nil {
				return err
			}
			for name, why := range r.Skipped {
				fmt.Fprintf(errOut, "warning: policy %s cannot be applied, and PodSecurityPolicy skips it too: %s\n", name, why)
			}
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return printReport(out, r)
		},
	}
	report.Flags().StringVarP(&output, "output", "o", "table", "table (for people) or json (for scripts)")
	report.Flags().BoolVarP(&all, "all-namespaces", "A", false, "every namespace (the default unless --namespace is given)")
	convert := &cobra.Command{
		Use:   "convert",
		Short: "Print the replacement as YAML for kubectl apply: Pod Security Admission labels, a ValidatingAdmissionPolicy that decides as the policies and their grants do, and MutatingAdmissionPolicies for their defaults",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := readCluster(cmd.Context(), flags, errOut)
			if err != nil {
				return err
			}
			var buf bytes.Buffer // written only once it is whole
			if err := pspmigration.WriteYAML(&buf, c.replacement); err != nil {
				return err
			}
			_, err = out.Write(buf.Bytes())
			return err
		},
	}
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Decide every workload and a generated corpus of pods both ways, PodSecurityPolicy and the replacement, and print every disagreement",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			c, err := readCluster(cmd.Context(), flags, errOut)
			if err != nil {
				return err
			}
			judge, err := pspmigration.NewJudge(c.replacement, c.schemas, c.rbac.Authorizer)
			if err != nil {
				return err
			}
			defer judge.Close()
			var namespaces []string
			for _, ns := range c.report.Namespaces {
				namespaces = append(namespaces, ns.Name)
			}
			started := time.Now()
			v, err := pspmigration.Verify(cmd.Context(), c.decider, judge, c.rbac, c.workloads, namespaces, func(done, total int) {
				fmt.Fprintf(errOut, "verify: %d of %d creations decided (%s)\n", done, total, time.Since(started).Round(time.Second))
			})
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(v); err != nil {
					return err
				}
			} else {
				printVerification(out, v)
			}
			if n := v.Avoidable(); n > 0 {
				return fmt.Errorf("%d of %d decisions differ where the replacement should agree", n, v.Cases)
			}
			return nil
		},
	}
	verify.Flags().StringVarP(&output, "output", "o", "table", "table (for people) or json (for scripts)")
	root.AddCommand(report, convert, verify)
	return root
}

// cluster is what convert and verify read: the report, and the
// replacement built from it.
type cluster struct {
	decider     *pspengine.Decider
	rbac        *pspmigration.RBAC
	workloads   []*pspmigration.Workload
	report      *pspmigration.Report
	replacement *pspmigration.Replacement
	schemas     openapi.Client
}

// readCluster reads every namespace and builds the replacement, with
// MutatingAdmissionPolicies when the cluster serves them.
func readCluster(ctx context.Context, flags *genericclioptions.ConfigFlags, errOut io.Writer) (*cluster, error) {
	c := &cluster{}
	var err error
	if c.report, err = buildReport(ctx, flags, "", c); err != nil {
		return nil, err
	}
	for name, why := range c.report.Skipped {
		fmt.Fprintf(errOut, "warning: policy %s cannot be applied, and PodSecurityPolicy skips it too; it is left out: %s\n", name, why)
	}
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	c.schemas = disco.OpenAPIV3()
	mutating, err := serves(disco, "admissionregistration.k8s.io/v1", "mutatingadmissionpolicies")
	if err != nil {
		return nil, err
	}
	if !mutating {
		fmt.Fprintln(errOut, "warning: the cluster does not serve admissionregistration.k8s.io/v1 mutatingadmissionpolicies: the output lists, per workload, the fields its manifest must now set")
	}
	policies := c.decider.Policies()
	c.replacement, err = pspmigration.Convert(policies, c.report, mutating)
	return c, err
}

// serves reports whether the cluster serves resource in groupVersion.
func serves(disco discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	list, err := disco.ServerResourcesForGroupVersion(groupVersion)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}

// printVerification writes each disagreement, then the count.
func printVerification(out io.Writer, v *pspmigration.Verification) {
	for _, d := range v.Disagreements {
		fmt.Fprintf(out, "%s, in %s, created by %s:\n  PodSecurityPolicy: %s\n  replacement:       %s\n", d.Case, d.Namespace, d.Requester, d.PodSecurityPolicy, d.Replacement)
		if len(d.Fields) > 0 {
			fmt.Fprintf(out, "  fields:            %s\n", strings.Join(d.Fields, ", "))
		}
		if d.Unavoidable != "" {
			fmt.Fprintf(out, "  unavoidable:       %s\n", d.Unavoidable)
		}
	}
	fmt.Fprintf(out, "%d decisions compared: %d disagreements, %d of them unavoidable\n", v.Cases, len(v.Disagreements), len(v.Disagreements)-v.Avoidable())
}

// buildReport reads the cluster and judges every workload; into, when
// given, keeps what was read.
func buildReport(ctx context.Context, flags *genericclioptions.ConfigFlags, namespace string, into *cluster) (*pspmigration.Report, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	// The API's deprecation warning on every call says what the user of
	// this tool knows already.
	pspConfig := rest.CopyConfig(config)
	pspConfig.WarningHandler = rest.NoWarnings{}
	psp, err := pspclient.NewForConfig(pspConfig)
	if err != nil {
		return nil, err
	}
	policies, err := pspmigration.Policies(ctx, psp)
	if err != nil {
		return nil, err
	}
	if len(policies) == 0 {
		return nil, errors.New("the cluster has no PodSecurityPolicy: there is nothing to migrate from (with the plugin on, no pod is admitted)")
	}
	rbac, err := pspmigration.ReadRBAC(ctx, kube)
	if err != nil {
		return nil, err
	}
	workloads, err := pspmigration.Collect(ctx, kube, namespace)
	if err != nil {
		return nil, err
	}
	decider, skipped := pspengine.NewDecider(policies, rbac.Authorizer)
	evaluator, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		return nil, err
	}
	r, err := pspmigration.Build(ctx, workloads, decider, evaluator)
	if err != nil {
		return nil, err
	}
	if into != nil {
		into.decider, into.rbac, into.workloads = decider, rbac, workloads
	}
	if len(skipped) > 0 {
		r.Skipped = map[string]string{}
		for name, why := range skipped {
			r.Skipped[name] = why.Error()
		}
	}
	return r, nil
}

// printReport writes the table: each workload, then each namespace's
// verdict.
func printReport(out io.Writer, r *pspmigration.Report) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tWORKLOAD\tADMITTED BY\tPOLICY NOW\tLEVEL\tPOLICY SETS")
	for _, e := range r.Workloads {
		now := e.Policy
		if now == "" {
			now = "(refused)"
		}
		fmt.Fprintf(w, "%s\t%s/%s\t%s\t%s\t%s\t%s\n", e.Namespace, e.Kind, e.Name, orNone(strings.Join(e.Admitted, ",")), now, e.Level, orNone(strings.Join(e.Changes, ", ")))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	for _, ns := range r.Namespaces {
		fmt.Fprintf(out, "namespace %s: pod-security.kubernetes.io/enforce=%s admits the %d of %d workload(s) PodSecurityPolicy admits", ns.Name, ns.Enforce, ns.Admitted, ns.Workloads)
		if ns.Stricter == "" {
			fmt.Fprintln(out)
			continue
		}
		fmt.Fprintf(out, "; %s would refuse %d:\n", ns.Stricter, len(ns.Breaks))
		for _, b := range ns.Breaks {
			fmt.Fprintf(out, "  %s: %s\n", b.Workload, b.Reasons)
		}
	}
	for _, e := range r.Workloads {
		if e.Refusal != "" {
			fmt.Fprintf(out, "%s/%s/%s is refused by PodSecurityPolicy now: %s\n", e.Kind, e.Namespace, e.Name, e.Refusal)
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
