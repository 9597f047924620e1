// Package fingerprint owns what the client tells the servers about its host:
// node attributes (cpu, memory, kernel, os, host, network, storage, nomad),
// node resources and reservations, driver info, the device groups the
// device plugins report (Devices), and (optionally) the ports
// bound on the node by processes the client did not start.
//
// Each fingerprinter reads the host (procfs, sysfs, statfs, uname,
// interfaces) and writes into a *structs.Node. It must never talk to the
// servers, start processes or change the host; config overrides win over
// what it detects.
package fingerprint
