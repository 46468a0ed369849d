package lineapi

// HostNamespaces are the host's namespaces a pod may share.
type HostNamespaces struct {
	Network, PID, IPC bool
}
