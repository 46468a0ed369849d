// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package embeddedetcd

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		servers []string
		wantErr string
	}{
		{name: "off", o: Options{}},
		{name: "on with a free port", o: Options{DataDir: "/d"}},
		{name: "on with a port", o: Options{DataDir: "/d", ClientURL: "http://127.0.0.1:2379"}},
		{name: "localhost", o: Options{DataDir: "/d", ClientURL: "http://localhost:2379"}},
		{name: "IPv6 loopback", o: Options{DataDir: "/d", ClientURL: "http://[::1]:2379"}},
		{name: "with --etcd-servers", o: Options{DataDir: "/d"}, servers: []string{"https://e:2379"},
			wantErr: "--embedded-etcd-data-dir cannot be combined with --etcd-servers=[https://e:2379]"},
		{name: "client URL without data dir", o: Options{ClientURL: "http://127.0.0.1:2379"},
			wantErr: "--embedded-etcd-client-url needs --embedded-etcd-data-dir"},
		{name: "not loopback", o: Options{DataDir: "/d", ClientURL: "http://0.0.0.0:2379"},
			wantErr: `the host must be a loopback address such as 127.0.0.1, not "0.0.0.0"`},
		{name: "a name other than localhost", o: Options{DataDir: "/d", ClientURL: "http://etcd:2379"},
			wantErr: "the host must be a loopback address"},
		{name: "https", o: Options{DataDir: "/d", ClientURL: "https://127.0.0.1:2379"},
			wantErr: "the scheme must be http"},
		{name: "unix socket", o: Options{DataDir: "/d", ClientURL: "unix:///tmp/etcd.sock"},
			wantErr: "the scheme must be http"},
		{name: "no port", o: Options{DataDir: "/d", ClientURL: "http://127.0.0.1"},
			wantErr: "the port must be a number from 1 to 65535"},
		{name: "port zero", o: Options{DataDir: "/d", ClientURL: "http://127.0.0.1:0"},
			wantErr: "the port must be a number from 1 to 65535"},
		{name: "a path", o: Options{DataDir: "/d", ClientURL: "http://127.0.0.1:2379/v3"},
			wantErr: "want only a scheme, host and port"},
		{name: "unparsable", o: Options{DataDir: "/d", ClientURL: "http://127.0.0.1:2379/%zz"},
			wantErr: "--embedded-etcd-client-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate(tt.servers)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCompleteChoosesALoopbackPort(t *testing.T) {
	o := Options{DataDir: "/d"}
	url, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	if url != o.ClientURL || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("Complete() = %q (ClientURL %q), want an http://127.0.0.1 URL kept in the options", url, o.ClientURL)
	}
	if err := o.Validate(nil); err != nil {
		t.Errorf("the chosen URL does not validate: %v", err)
	}
	given := Options{DataDir: "/d", ClientURL: "http://127.0.0.1:2379"}
	if url, _ := given.Complete(); url != "http://127.0.0.1:2379" {
		t.Errorf("Complete() replaced a given URL with %q", url)
	}
}
