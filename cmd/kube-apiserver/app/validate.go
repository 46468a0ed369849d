// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
	"github.com/turnstile-k8s/turnstile/pkg/staticpod"
)

// validateOptions are --validate-only and its companions: check a command
// line, or a kubeadm manifest's, and exit without serving, so that a mistake
// is found before a control-plane node crash-loops on it.
type validateOptions struct {
	only         bool
	output       string
	fromManifest string
}

func (v *validateOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&v.only, "validate-only", false, "Check every flag, the admission plugin lists, the file of --admission-control-config-file and every file it references, "+
		"and each plugin's configuration, then exit without serving: status 0 when all is well, 1 with every problem listed when not. Needs no etcd and no network.")
	fs.StringVarP(&v.output, "validate-output", "o", "text", "With --validate-only: how to print the problems, text or json.")
	fs.StringVar(&v.fromManifest, "from-manifest", "", "With --validate-only: check the command line of the kube-apiserver container in this kubeadm static pod manifest "+
		"(for example /etc/kubernetes/manifests/kube-apiserver.yaml) instead of this one's, with the container's paths mapped to the host through its hostPath volumes.")
}

// unused refuses the companions without --validate-only, which would
// otherwise start a server that ignores them.
func (v *validateOptions) unused() error {
	switch {
	case v.fromManifest != "":
		return errors.New("--from-manifest is only for --validate-only")
	case v.output != "text":
		return errors.New("--validate-output (-o) is only for --validate-only")
	}
	return nil
}

// Finding is one problem --validate-only found.
type Finding struct {
	// Source is what the problem is in: "flags", "manifest" or "admission-control-config-file".
	Source string `json:"source"`
	// File is the file the problem is in, when there is one.
	File string `json:"file,omitempty"`
	// Plugin is the admission plugin the problem concerns, when there is one.
	Plugin string `json:"plugin,omitempty"`
	// Field is the field at fault, when the check names one.
	Field string `json:"field,omitempty"`
	// Message says what is wrong, naming the file, plugin and field too: the
	// text output is these messages, one a line.
	Message string `json:"message"`
}

// validateOnly runs every check on srv's command line, or the manifest's,
// prints what it found to out, and fails when it found anything.
func validateOnly(ctx context.Context, srv *serverFlags, out io.Writer) error {
	format := srv.validate.output
	if format != "text" && format != "json" {
		return fmt.Errorf("--validate-output %q: want text or json", format)
	}
	var findings []Finding
	target, mapPath := srv, func(p string) string { return p }
	if file := srv.validate.fromManifest; file != "" {
		var cmd *staticpod.Command
		target, cmd, findings = parseManifest(file)
		if cmd != nil {
			mapPath = cmd.HostPath
		}
	}
	if target != nil {
		findings = append(findings, check(ctx, target, mapPath)...)
	}
	if err := printFindings(out, format, findings); err != nil {
		return err
	}
	if len(findings) > 0 {
		return fmt.Errorf("--validate-only: %d problem(s)", len(findings))
	}
	return nil
}

// parseManifest reads a static pod manifest's command line into a fresh set
// of flags. Each argument is parsed on its own, so that every unknown or
// malformed flag is reported, not only the first.
func parseManifest(file string) (*serverFlags, *staticpod.Command, []Finding) {
	cmd, err := staticpod.Read(file)
	if err != nil {
		return nil, nil, []Finding{{Source: "manifest", File: file, Message: err.Error()}}
	}
	srv, err := newServerFlags()
	if err != nil {
		return nil, nil, []Finding{{Source: "manifest", File: file, Message: err.Error()}}
	}
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, set := range srv.flags.FlagSets {
		fs.AddFlagSet(set)
	}
	var findings []Finding
	for i := 0; i < len(cmd.Args); i++ {
		args := cmd.Args[i : i+1]
		// "--flag value" as two arguments, as a manifest may write it.
		if name, ok := strings.CutPrefix(cmd.Args[i], "--"); ok && !strings.Contains(name, "=") && i+1 < len(cmd.Args) && !strings.HasPrefix(cmd.Args[i+1], "-") {
			if f := fs.Lookup(name); f != nil && f.Value.Type() != "bool" {
				args = cmd.Args[i : i+2]
				i++
			}
		}
		if err := fs.Parse(args); err != nil {
			findings = append(findings, Finding{Source: "manifest", File: file, Field: staticpod.Container + " command", Message: fmt.Sprintf("%s: %s: %v", file, strings.Join(args, " "), err)})
		}
	}
	if len(fs.Args()) > 0 {
		findings = append(findings, Finding{Source: "manifest", File: file, Message: fmt.Sprintf("%s: kube-apiserver takes no arguments, got %q", file, fs.Args())})
	}
	if err := srv.options.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		findings = append(findings, Finding{Source: "manifest", File: file, Message: file + ": " + err.Error()})
	}
	return srv, cmd, findings
}

// check runs the checks the server would run before serving, and the strict
// check of the admission configuration, collecting every problem. It neither
// contacts etcd nor writes anything that stays.
func check(ctx context.Context, srv *serverFlags, mapPath func(string) string) []Finding {
	s := srv.options
	var findings []Finding
	flagProblem := func(err error) {
		findings = append(findings, Finding{Source: "flags", Field: fieldOf(err), Message: err.Error()})
	}

	if err := srv.etcd.Validate(s.Etcd.StorageConfig.Transport.ServerList); err != nil {
		flagProblem(err)
	}
	if srv.etcd.Enabled() {
		// Validation needs a server; it is never contacted.
		s.Etcd.StorageConfig.Transport.ServerList = []string{"http://127.0.0.1:2379"}
	}
	// The admission configuration needs nothing but the plugin lists.
	if file := s.Admission.GenericAdmission.ConfigFile; file != "" {
		plugins := configfile.Plugins{Registered: s.Admission.GenericAdmission.Plugins.Registered(), Enabled: configfile.EnabledPlugins(s.Admission)}
		for _, err := range configfile.Read(file, mapPath).Problems(plugins) {
			f := Finding{Source: configfile.Flag, File: file, Field: fieldOf(err), Message: err.Error()}
			if pe := (*configfile.PluginError)(nil); errors.As(err, &pe) {
				f.Plugin = pe.Plugin
			}
			findings = append(findings, f)
		}
	}
	// Without a serving certificate, Complete writes a self-signed one to
	// --cert-dir: give it a directory that goes away.
	if s.SecureServing.ServerCert.CertKey.CertFile == "" && s.SecureServing.ServerCert.CertKey.KeyFile == "" {
		if dir, err := os.MkdirTemp("", "kube-apiserver-validate-"); err == nil {
			defer os.RemoveAll(dir)
			s.SecureServing.ServerCert.CertDirectory = dir
		}
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		flagProblem(err)
		return findings
	}
	for _, err := range completed.Validate() {
		flagProblem(err)
	}
	return findings
}

// fieldOf is the field a validation error names, if it carries one: the
// first one, for a list of them.
func fieldOf(err error) string {
	if fe := (*field.Error)(nil); errors.As(err, &fe) {
		return fe.Field
	}
	if agg := utilerrors.Aggregate(nil); errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if f := fieldOf(e); f != "" {
				return f
			}
		}
	}
	return ""
}

func printFindings(out io.Writer, format string, findings []Finding) error {
	if format == "json" {
		if findings == nil {
			findings = []Finding{}
		}
		e := json.NewEncoder(out)
		e.SetIndent("", "  ")
		return e.Encode(findings)
	}
	if len(findings) == 0 {
		_, err := fmt.Fprintln(out, "kube-apiserver --validate-only: no problems found")
		return err
	}
	for _, f := range findings {
		if _, err := fmt.Fprintln(out, f.Message); err != nil {
			return err
		}
	}
	return nil
}
