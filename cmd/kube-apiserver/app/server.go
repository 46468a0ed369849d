// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package app builds the kube-apiserver command. Upstream's constructor
// creates its options and their flags in one step, leaving no point at which
// to add admission plugins, so we build the command here from upstream's
// parts: its options, its flag sets and its Run. The only flags of our own
// are the embedded etcd ones, --validate-only's and the authorization rules
// of authorization.go. Before Run, the admission
// configuration file is checked strictly (pkg/admission/configfile);
// --validate-only runs every check and exits (validate.go).
package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission"
	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
	"github.com/turnstile-k8s/turnstile/pkg/embeddedetcd"
)

// description is upstream's, word for word, because `kube-apiserver -h`
// must read the same as upstream's apart from the plugin names.
const description = `The Kubernetes API server validates and configures data
for the api objects which include pods, services, replicationcontrollers, and
others. The API Server services REST operations and provides the frontend to the
cluster's shared state through which all other components interact.`

// NewAPIServerCommand returns the kube-apiserver command: upstream's options
// with Turnstile's admission plugins registered before any flag is built.
func NewAPIServerCommand() (*cobra.Command, error) {
	srv, err := newServerFlags()
	if err != nil {
		return nil, err
	}
	s, etcd := srv.options, &srv.etcd
	ctx := signalContext()
	featureGate := s.GenericServerRunOptions.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)

	cmd := &cobra.Command{
		Use:          "kube-apiserver",
		Long:         description,
		SilenceUsage: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
				return err
			}
			// The loopback client would otherwise log the server's own warnings.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if srv.validate.only {
				return validateOnly(ctx, srv, cmd.OutOrStdout())
			}
			if err := srv.validate.unused(); err != nil {
				return err
			}
			if err := logsapi.ValidateAndApply(s.Logs, featureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())

			if err := etcd.Validate(s.Etcd.StorageConfig.Transport.ServerList); err != nil {
				return err
			}
			if etcd.Enabled() {
				url, err := etcd.Complete()
				if err != nil {
					return err
				}
				s.Etcd.StorageConfig.Transport.ServerList = []string{url}
			}
			completed, err := s.Complete(ctx)
			if err != nil {
				return err
			}
			if errs := completed.Validate(); len(errs) != 0 {
				return utilerrors.NewAggregate(errs)
			}
			// Upstream reads this file leniently and late; check it strictly
			// now, so a mistake stops the server with the file's name.
			if err := configfile.Check(completed.Admission); err != nil {
				return err
			}
			addFeatureMetrics(featureGate.(featuregate.MutableFeatureGate))
			s.GenericServerRunOptions.ComponentGlobalsRegistry.AddMetrics()
			if !etcd.Enabled() {
				return run(ctx, completed, srv.authorization)
			}
			return runWithEmbeddedEtcd(ctx, completed, etcd, srv.authorization)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if arg != "" {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	cmd.SetContext(ctx)
	for _, fs := range srv.flags.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, srv.flags, cols)
	return cmd, nil
}

// serverFlags is one kube-apiserver command line: upstream's options with our
// registry applied, our own options, and the flag sets that fill them.
// --validate-only --from-manifest builds a second one for the manifest's
// command line.
type serverFlags struct {
	options       *options.ServerRunOptions
	etcd          embeddedetcd.Options
	validate      validateOptions
	authorization authorizationOptions
	flags         cliflag.NamedFlagSets
}

func newServerFlags() (*serverFlags, error) {
	srv := &serverFlags{options: options.NewServerRunOptions()}
	if err := admission.Apply(srv.options.Admission.GenericAdmission); err != nil {
		return nil, err
	}
	srv.flags = srv.options.Flags()
	srv.options.Flagz = flagz.NamedFlagSetsReader{FlagSets: srv.flags}
	srv.etcd.AddFlags(srv.flags.FlagSet("embedded etcd"))
	srv.validate.addFlags(srv.flags.FlagSet("validation"))
	srv.authorization.addFlags(srv.flags.FlagSet("turnstile authorization"))
	verflag.AddFlags(srv.flags.FlagSet("global"))
	globalflag.AddGlobalFlags(srv.flags.FlagSet("global"), "kube-apiserver", logs.SkipLoggingConfigurationFlags())
	return srv, nil
}

// runWithEmbeddedEtcd starts etcd, then the apiserver. On a signal the
// apiserver drains and stops first and etcd closes last, so every write the
// apiserver acknowledged is on disk. If etcd fails, the apiserver is shut
// down and the command exits with etcd's error.
func runWithEmbeddedEtcd(ctx context.Context, completed options.CompletedOptions, o *embeddedetcd.Options, authz authorizationOptions) error {
	e, err := embeddedetcd.Start(o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case err, ok := <-e.Err():
			if ok && err != nil {
				cancel(fmt.Errorf("embedded etcd failed: %w", err))
			}
		case <-ctx.Done():
		}
	}()
	err = run(ctx, completed, authz)
	e.Close()
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}
