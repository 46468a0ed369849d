// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package pspmigration is the way off PodSecurityPolicy that kubectl psp
// offers: which policy admits each workload, what it changes, and which
// Pod Security Standards level the workload meets, judged by the plugin's
// own decision procedure and upstream's Pod Security Admission checks.
package pspmigration

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
)

// Workload is a pod template the cluster runs or will run: a pod no
// controller owns, or the template of a top-level controller (one no other
// controller owns), scaled to zero or not yet run included.
type Workload struct {
	Kind, Namespace, Name string
	Template              corev1.PodTemplateSpec
	// Creator is the user its pods are created as: the service account of
	// the controller that creates them (kube-controller-manager with
	// --use-service-account-credentials, as kubeadm runs it), or "" for a
	// pod, whose creator the cluster does not record.
	Creator string
	// Admitted are the kubernetes.io/psp annotations of its pods, sorted,
	// each once: the policies that admitted what runs now.
	Admitted []string
}

// Ref is kind/namespace/name.
func (w *Workload) Ref() string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// creators are the controllers that create each kind's pods.
var creators = map[string]string{
	"Deployment":            "replicaset-controller", // through its ReplicaSets
	"ReplicaSet":            "replicaset-controller",
	"StatefulSet":           "statefulset-controller",
	"DaemonSet":             "daemon-set-controller",
	"Job":                   "job-controller",
	"CronJob":               "job-controller", // through its Jobs
	"ReplicationController": "replication-controller",
}

// Collect lists the workloads of namespace ("" for all) and their pods'
// admitting policies.
func Collect(ctx context.Context, c kubernetes.Interface, namespace string) ([]*Workload, error) {
	// Every object first; those whose controller is not listed (none, or
	// gone) are the workloads.
	type object struct {
		uid, owner types.UID
		workload   *Workload
	}
	var objects []object
	add := func(kind string, meta metav1.ObjectMeta, template corev1.PodTemplateSpec) {
		o := object{uid: meta.UID, workload: &Workload{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, Template: template}}
		if owner := metav1.GetControllerOf(&meta); owner != nil {
			o.owner = owner.UID
		}
		if kind != "Pod" {
			o.workload.Creator = serviceaccount.MakeUsername("kube-system", creators[kind])
		}
		objects = append(objects, o)
	}
	list := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("listing %s: %w", what, err)
		}
		return nil
	}
	opts := metav1.ListOptions{}
	deployments, err := c.AppsV1().Deployments(namespace).List(ctx, opts)
	if err := list("deployments", err); err != nil {
		return nil, err
	}
	for _, o := range deployments.Items {
		add("Deployment", o.ObjectMeta, o.Spec.Template)
	}
	replicaSets, err := c.AppsV1().ReplicaSets(namespace).List(ctx, opts)
	if err := list("replicasets", err); err != nil {
		return nil, err
	}
	for _, o := range replicaSets.Items {
		add("ReplicaSet", o.ObjectMeta, o.Spec.Template)
	}
	statefulSets, err := c.AppsV1().StatefulSets(namespace).List(ctx, opts)
	if err := list("statefulsets", err); err != nil {
		return nil, err
	}
	for _, o := range statefulSets.Items {
		add("StatefulSet", o.ObjectMeta, o.Spec.Template)
	}
	daemonSets, err := c.AppsV1().DaemonSets(namespace).List(ctx, opts)
	if err := list("daemonsets", err); err != nil {
		return nil, err
	}
	for _, o := range daemonSets.Items {
		add("DaemonSet", o.ObjectMeta, o.Spec.Template)
	}
	cronJobs, err := c.BatchV1().CronJobs(namespace).List(ctx, opts)
	if err := list("cronjobs", err); err != nil {
		return nil, err
	}
	for _, o := range cronJobs.Items {
		add("CronJob", o.ObjectMeta, o.Spec.JobTemplate.Spec.Template)
	}
	jobs, err := c.BatchV1().Jobs(namespace).List(ctx, opts)
	if err := list("jobs", err); err != nil {
		return nil, err
	}
	for _, o := range jobs.Items {
		add("Job", o.ObjectMeta, o.Spec.Template)
	}
	controllers, err := c.CoreV1().ReplicationControllers(namespace).List(ctx, opts)
	if err := list("replicationcontrollers", err); err != nil {
		return nil, err
	}
	for _, o := range controllers.Items {
		if o.Spec.Template != nil {
			add("ReplicationController", o.ObjectMeta, *o.Spec.Template)
		}
	}
	pods, err := c.CoreV1().Pods(namespace).List(ctx, opts)
	if err := list("pods", err); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		add("Pod", p.ObjectMeta, corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec})
	}
	owners := map[types.UID]types.UID{}
	for _, o := range objects {
		owners[o.uid] = o.owner
	}
	var all []*Workload
	byUID := map[types.UID]*Workload{}
	for _, o := range objects {
		if _, listed := owners[o.owner]; o.owner == "" || !listed {
			all = append(all, o.workload)
			byUID[o.uid] = o.workload
		}
	}
	// Each pod's admitting policy goes to its top-level workload.
	for _, p := range pods.Items {
		policy := p.Annotations["kubernetes.io/psp"]
		if policy == "" {
			continue
		}
		uid := p.UID
		for byUID[uid] == nil && owners[uid] != "" {
			uid = owners[uid]
		}
		if w := byUID[uid]; w != nil && !slices.Contains(w.Admitted, policy) {
			w.Admitted = append(w.Admitted, policy)
			slices.Sort(w.Admitted)
		}
	}
	slices.SortFunc(all, func(a, b *Workload) int {
		return strings.Compare(a.Namespace+"/"+a.Kind+"/"+a.Name, b.Namespace+"/"+b.Kind+"/"+b.Name)
	})
	return all, nil
}
